package gatereceiver

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// A caller with the token opens the gate: the receiver writes the request annotations, the
// controller opens the gate and its history names the receiver and the reason; then the same
// caller closes it. The token never reaches the logs.
func TestReceiverOpensAndClosesWithToken(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "s3cr3t-token-for-release"
	newReceiverGate(t, ns, "release", token)

	code, msg := post(t, "/gates/"+ns+"/release/open", []byte(`{"reason":"deploy 1.2.3","for":"30m","timestamp":"`+
		time.Now().UTC().Format(time.RFC3339)+`"}`), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Expect(msg).To(Equal("open requested"))
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))

	gate := getGate(g, ns, "release")
	g.Expect(gate.Status.History[0]).To(And(
		HaveField("Opened", true),
		HaveField("Cause", "request"),
		HaveField("Reason", "receiver/release-token: deploy 1.2.3"),
		HaveField("RequestedBy", controllerUser),
	))
	g.Expect(gate.Status.ResetToDefaultAt.Sub(gate.Status.RequestedAt.Time)).To(Equal(30 * time.Minute))
	g.Eventually(func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Type+" "+e.Reason+": "+e.Message)
		}
		return out
	}, 10*time.Second).Should(ContainElement(
		"Normal ReceiverRequest: open requested through the webhook receiver: receiver/release-token: deploy 1.2.3"))

	code, msg = post(t, "/gates/"+ns+"/release/close", requestBody("rollout done", time.Now()), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("False"))
	g.Expect(getGate(g, ns, "release").Status.History[0]).To(And(
		HaveField("Opened", false), HaveField("Reason", "receiver/release-token: rollout done")))

	for _, line := range logs.Lines() {
		g.Expect(line).NotTo(ContainSubstring(token))
	}
}

// The body signed with the token (X-Signature: sha256=<HMAC>, as Flux's generic-hmac receivers
// take it) authenticates a request as well as the token itself.
func TestReceiverAcceptsHMACSignature(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "hmac-key-of-release"
	newReceiverGate(t, ns, "release", token)

	body := requestBody("signed by CI", time.Now())
	code, msg := post(t, "/gates/"+ns+"/release/open", body, withSignature(token, body))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))
	g.Expect(getGate(g, ns, "release").Status.History[0].Reason).To(Equal("receiver/release-token: signed by CI"))
}

// A bad token, a bad signature, a signature of another body or no credentials at all get 401,
// and the gate is left as it was: no request annotation is written.
func TestReceiverRefusesBadToken(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "the-right-token"
	newReceiverGate(t, ns, "release", token)

	body := requestBody("let me in", time.Now())
	for name, headers := range map[string]map[string]string{
		"wrong token":             withToken("the-wrong-token"),
		"token prefix":            withToken("the-right"),
		"empty token":             {"Authorization": "Bearer "},
		"basic auth":              {"Authorization": "Basic dGhlLXJpZ2h0LXRva2Vu"},
		"wrong signature key":     withSignature("the-wrong-token", body),
		"signature of other body": withSignature(token, requestBody("something else", time.Now())),
		"sha1 signature":          {"X-Signature": "sha1=" + strings.Repeat("0", 40)},
		"no credentials":          {},
	} {
		code, msg := post(t, "/gates/"+ns+"/release/open", body, headers)
		g.Expect(code).To(Equal(401), name)
		g.Expect(msg).To(Equal("bad token or signature"), name)
	}
	g.Consistently(func(g Gomega) map[string]string { return requestAnnotations(g, ns, "release") }, 2*time.Second).Should(BeEmpty())
	g.Expect(opened(ns, "release")(g)).To(Equal("False"))
}

// An unknown gate, a gate without spec.receiver and a gate whose Secret is missing or has no
// token get the same 404: a caller cannot learn which gates exist.
func TestReceiverAnswersNotFoundAlike(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	const token = "token-of-nothing"
	g.Expect(k8s.Create(ctx, &gatingv1.Gate{ObjectMeta: objectMeta(ns, "plain")})).To(Succeed())
	missing := &gatingv1.Gate{ObjectMeta: objectMeta(ns, "missing-secret")}
	missing.Spec.Receiver = &gatingv1.GateReceiver{}
	missing.Spec.Receiver.SecretRef.Name = "not-there"
	g.Expect(k8s.Create(ctx, missing)).To(Succeed())
	g.Eventually(opened(ns, "missing-secret"), 10*time.Second).Should(Equal("True"))
	g.Eventually(opened(ns, "plain"), 10*time.Second).Should(Equal("True"))

	for _, path := range []string{"/gates/" + ns + "/nope/open", "/gates/" + ns + "/plain/close", "/gates/" + ns + "/missing-secret/close", "/gates/other-ns/plain/close"} {
		code, msg := post(t, path, requestBody("", time.Now()), withToken(token))
		g.Expect(code).To(Equal(404), path)
		g.Expect(msg).To(Equal("no webhook receiver for this gate"), path)
	}
	g.Expect(requestAnnotations(g, ns, "plain")).To(BeEmpty())
	g.Expect(requestAnnotations(g, ns, "missing-secret")).To(BeEmpty())
}
