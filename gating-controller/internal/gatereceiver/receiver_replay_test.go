package gatereceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A request sent again is refused (409) and changes nothing: the gate opened by a request and
// closed by a later one stays closed when the first request is replayed, to the same path or to
// another one, with the token or with its signature.
func TestReceiverRefusesReplay(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "replayed-token"
	newReceiverGate(t, ns, "release", token)

	openBody := requestBody("deploy", time.Now())
	code, msg := post(t, "/gates/"+ns+"/release/open", openBody, withSignature(token, openBody))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))
	code, msg = post(t, "/gates/"+ns+"/release/close", requestBody("incident", time.Now()), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("False"))
	before := requestAnnotations(g, ns, "release")

	for _, path := range []string{"/gates/" + ns + "/release/open", "/gates/" + ns + "/release/close"} {
		code, msg = post(t, path, openBody, withSignature(token, openBody))
		g.Expect(code).To(Equal(409), path)
		g.Expect(msg).To(Equal("this request was already received: send a new timestamp"))
		code, _ = post(t, path, openBody, withToken(token))
		g.Expect(code).To(Equal(409), path)
	}
	g.Consistently(func(g Gomega) map[string]string { return requestAnnotations(g, ns, "release") }, 2*time.Second).Should(Equal(before))
	g.Expect(opened(ns, "release")(g)).To(Equal("False"))
}

// A request whose timestamp is more than five minutes away from the receiver's clock, either
// way, is refused (401) even with the right token: a captured request cannot be sent again once
// the replay window has forgotten it.
func TestReceiverRefusesStaleTimestamp(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "stale-token"
	newReceiverGate(t, ns, "release", token)

	for _, at := range []time.Time{time.Now().Add(-6 * time.Minute), time.Now().Add(6 * time.Minute), time.Now().Add(-24 * time.Hour)} {
		body := requestBody("late", at)
		code, msg := post(t, "/gates/"+ns+"/release/open", body, withSignature(token, body))
		g.Expect(code).To(Equal(401), string(body))
		g.Expect(msg).To(ContainSubstring("is more than 5m0s away from the receiver's clock"))
	}
	code, msg := post(t, "/gates/"+ns+"/release/open", []byte(`{"reason":"no time"}`), withToken(token))
	g.Expect(code).To(Equal(400))
	g.Expect(msg).To(ContainSubstring("timestamp is required"))
	g.Consistently(func(g Gomega) map[string]string { return requestAnnotations(g, ns, "release") }, 2*time.Second).Should(BeEmpty())

	// Four minutes off is within the window.
	code, msg = post(t, "/gates/"+ns+"/release/open", requestBody("slow clock", time.Now().Add(-4*time.Minute)), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))
}
