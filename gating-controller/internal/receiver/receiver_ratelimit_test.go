package receiver

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Each gate takes a burst of 10 requests, then one every 6 seconds: the eleventh request in a row
// gets 429, whatever its token, while another gate still takes requests.
func TestReceiverRateLimitsPerGate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	const token = "busy-token"
	newReceiverGate(t, ns, "busy", token)
	newReceiverGate(t, ns, "quiet", token)

	for i := range 10 {
		code, msg := post(t, "/gates/"+ns+"/busy/open", requestBody(fmt.Sprintf("try %d", i), time.Now()), withToken(token))
		g.Expect(code).To(Equal(202), msg)
	}
	code, msg := post(t, "/gates/"+ns+"/busy/open", requestBody("one too many", time.Now()), withToken(token))
	g.Expect(code).To(Equal(429))
	g.Expect(msg).To(Equal("too many requests for this gate"))
	code, _ = post(t, "/gates/"+ns+"/busy/open", requestBody("bad token too", time.Now()), withToken("wrong"))
	g.Expect(code).To(Equal(429))

	code, msg = post(t, "/gates/"+ns+"/quiet/open", requestBody("other gate", time.Now()), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "busy"), 10*time.Second).Should(Equal("True"))
	g.Expect(getGate(g, ns, "busy").Status.Request.Reason).To(Equal("receiver/busy-token: try 9"))
}
