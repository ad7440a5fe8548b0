package gatereceiver

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A request lasts at most a week by default (--receiver-max-duration): a longer `for` is refused
// with 400 and a message that names the limit, and the gate is left as it was; a week is taken.
func TestReceiverCapsTheDurationOfARequest(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "long-request-token"
	newReceiverGate(t, ns, "release", token)

	send := func(url, gate, verb, forDuration string) (int, string) {
		body := fmt.Sprintf(`{"reason":"for %s","for":%q,"timestamp":%q}`, forDuration, forDuration, time.Now().UTC().Format(time.RFC3339Nano))
		return postTo(t, url, "/gates/"+ns+"/"+gate+"/"+verb, []byte(body), withToken(token))
	}
	for _, d := range []string{"169h", "8760h", "100000h"} {
		code, msg := send(receiverURL, "release", "open", d)
		g.Expect(code).To(Equal(400), d)
		g.Expect(msg).To(Equal(fmt.Sprintf(
			"for %q is longer than 168h0m0s, the longest request this receiver accepts (--receiver-max-duration)", d)))
	}
	g.Consistently(func(g Gomega) map[string]string { return requestAnnotations(g, ns, "release") }, time.Second).Should(BeEmpty())

	code, msg := send(receiverURL, "release", "open", "168h")
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))
	st := getGate(g, ns, "release").Status
	g.Expect(st.ResetToDefaultAt.Sub(st.RequestedAt.Time)).To(Equal(168 * time.Hour))

	// Another limit (--receiver-max-duration=1h).
	url := startReceiver(t, Limits{MaxDuration: time.Hour})
	code, msg = send(url, "release", "close", "61m")
	g.Expect(code).To(Equal(400))
	g.Expect(msg).To(Equal(`for "61m" is longer than 1h0m0s, the longest request this receiver accepts (--receiver-max-duration)`))
	code, msg = send(url, "release", "close", "1h")
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("False"))
}
