package gatereceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Tokens the API server does not accept spend the source address's failed attempts, as bad
// tokens of /open do: once spent, the receiver stops asking the API server for that address
// (429), except for a token it accepted recently, which is still checked by the API server each
// time, so an approver behind the same Ingress or NAT as the flood gets through. A token not seen
// yet waits with the flood. This receiver takes 2 failed attempts per address, refilled one a
// minute, so that a slow machine cannot refill the bucket during the test.
func TestReceiverApprovalsFailedAttempts(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	approvalPolicy(t)
	ana, bo := serviceAccountToken(t, ns, "ana"), serviceAccountToken(t, ns, "bo")
	grantRespond(t, ns, map[string]string{"ana": ana, "bo": bo})
	approvalGate(t, ns, "release", "", serviceAccountUser(ns, "ana"), serviceAccountUser(ns, "bo"))
	url := startReceiver(t, Limits{FailureBurst: 2, FailureInterval: time.Minute})
	approve := "/gates/" + ns + "/release/approve"

	code, msg := postTo(t, url, approve, respondBodyOf("first"), withToken(ana))
	g.Expect(code).To(Equal(201), msg)
	for range 2 {
		code, msg = postTo(t, url, approve, respondBodyOf("guess"), withToken("guessed-token"))
		g.Expect(code).To(Equal(401), msg)
	}
	code, msg = postTo(t, url, approve, respondBodyOf("guess"), withToken("guessed-token"))
	g.Expect(code).To(Equal(429), msg)
	g.Expect(msg).To(Equal("too many failed attempts from this address"))
	code, msg = postTo(t, url, approve, respondBodyOf("new here"), withToken(bo))
	g.Expect(code).To(Equal(429), msg)

	code, msg = postTo(t, url, approve, respondBodyOf("again"), withToken(ana))
	g.Expect(code).To(Equal(201), msg)
	g.Expect(gateApprovals(g, ns)).To(HaveLen(2))
}

// Responses have a budget per gate of their own, apart from the gate's requests: an approver
// over it gets 429, while the holder of the gate's token still opens it, and the other way round.
func TestReceiverApprovalsRateLimitPerGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	approvalPolicy(t)
	ana := serviceAccountToken(t, ns, "ana")
	grantRespond(t, ns, map[string]string{"ana": ana})
	const pipelineToken = "pipeline-token"
	approvalGate(t, ns, "release", pipelineToken, serviceAccountUser(ns, "ana"), serviceAccountUser(ns, "bo"))
	url := startReceiver(t, Limits{Burst: 2, RateInterval: time.Minute})
	approve, open := "/gates/"+ns+"/release/approve", "/gates/"+ns+"/release/open"

	for _, reason := range []string{"one", "two"} {
		code, msg := postTo(t, url, approve, respondBodyOf(reason), withToken(ana))
		g.Expect(code).To(Equal(201), msg)
	}
	code, msg := postTo(t, url, approve, respondBodyOf("three"), withToken(ana))
	g.Expect(code).To(Equal(429), msg)
	g.Expect(msg).To(Equal("too many requests for this gate"))
	for _, reason := range []string{"one", "two"} {
		code, msg = postTo(t, url, open, requestBody(reason, time.Now()), withToken(pipelineToken))
		g.Expect(code).To(Equal(202), msg)
	}
	code, _ = postTo(t, url, open, requestBody("three", time.Now()), withToken(pipelineToken))
	g.Expect(code).To(Equal(429))
	g.Expect(gateApprovals(g, ns)).To(HaveLen(2))
}
