package gatereceiver

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Each gate takes a burst of requests, then one per interval: the authenticated request after
// the burst gets 429 with Retry-After, while another gate still takes requests. A request without
// the token is refused for its credentials (401), never for the gate's rate. This receiver takes
// 3 at once and one a minute, so that a slow machine cannot refill the bucket during the test.
func TestReceiverRateLimitsPerGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "busy-token"
	newReceiverGate(t, ns, "busy", token)
	newReceiverGate(t, ns, "quiet", token)
	url := startReceiver(t, Limits{Burst: 3, RateInterval: time.Minute})

	for i := range 3 {
		code, msg := postTo(t, url, "/gates/"+ns+"/busy/open", requestBody(fmt.Sprintf("try %d", i), time.Now()), withToken(token))
		g.Expect(code).To(Equal(202), msg)
	}
	code, msg := postTo(t, url, "/gates/"+ns+"/busy/open", requestBody("one too many", time.Now()), withToken(token))
	g.Expect(code).To(Equal(429))
	g.Expect(msg).To(Equal("too many requests for this gate"))
	code, msg = postTo(t, url, "/gates/"+ns+"/busy/open", requestBody("bad token", time.Now()), withToken("wrong"))
	g.Expect(code).To(Equal(401), msg)
	req, err := http.NewRequest(http.MethodPost, url+"/gates/"+ns+"/busy/open", bytes.NewReader(requestBody("again", time.Now())))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(429))
	g.Expect(resp.Header.Get("Retry-After")).To(Equal("60"), "one more request a minute")

	code, msg = postTo(t, url, "/gates/"+ns+"/quiet/open", requestBody("other gate", time.Now()), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "busy"), 10*time.Second).Should(Equal("True"))
	g.Eventually(opened(ns, "quiet"), 10*time.Second).Should(Equal("True"))
	g.Expect(getGate(g, ns, "busy").Status.Request.Reason).To(Equal("receiver/busy-token: try 2"))
}

// With the defaults, a gate takes 10 requests at once: the eleventh gets 429.
func TestReceiverDefaultRateLimit(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "default-rate-token"
	newReceiverGate(t, ns, "release", token)

	codes := map[int]int{}
	for i := range 11 {
		code, _ := post(t, "/gates/"+ns+"/release/open", requestBody(fmt.Sprintf("try %d", i), time.Now()), withToken(token))
		codes[code]++
	}
	// A slow machine may refill one request (one every 6 seconds) on the way.
	g.Expect(codes[202]).To(BeNumerically(">=", 10))
	g.Expect(codes[202] + codes[429]).To(Equal(11))
	code, msg := post(t, "/gates/"+ns+"/release/open", requestBody("twelfth", time.Now()), withToken(token))
	g.Expect(code).To(Equal(429), msg)
}
