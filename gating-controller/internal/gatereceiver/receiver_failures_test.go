package gatereceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// The receiver authenticates before it counts a request against the gate: a flood of requests
// without the token, from the very address the gate's caller uses (an Ingress controller, a
// NAT), gets 401 until the address has spent its failed attempts, then 429, and never keeps the
// caller out. This receiver takes 5 failed attempts per address and 3 requests per gate, and
// refills each one a minute, so that a slow machine cannot refill a bucket during the test.
func TestReceiverFloodWithoutTokenDoesNotLockOutCallers(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token, hotfixToken = "release-train-token", "hotfix-token"
	newReceiverGate(t, ns, "release", token)
	newReceiverGate(t, ns, "hotfix", hotfixToken)
	url := startReceiver(t, Limits{Burst: 3, RateInterval: time.Minute, FailureBurst: 5, FailureInterval: time.Minute})
	path := "/gates/" + ns + "/release/open"

	codes := map[int]int{}
	messages := map[string]bool{}
	for i := range 60 {
		body := requestBody("let me in", time.Now())
		headers := []map[string]string{withToken("guess"), withSignature("guess", body), {}}[i%3]
		code, msg := postTo(t, url, path, body, headers)
		codes[code]++
		messages[msg] = true
	}
	g.Expect(codes).To(Equal(map[int]int{401: 5, 429: 55}))
	g.Expect(messages).To(Equal(map[string]bool{
		"bad token or signature": true, "too many failed attempts from this address": true}))

	// The gate's own budget is whole: its caller, from the same address, makes its 3 requests.
	for i := range 3 {
		body := requestBody(fmt.Sprintf("release %d", i), time.Now())
		code, msg := postTo(t, url, path, body, withToken(token))
		g.Expect(code).To(Equal(202), msg)
	}
	code, msg := postTo(t, url, path, requestBody("a fourth", time.Now()), withToken(token))
	g.Expect(code).To(Equal(429))
	g.Expect(msg).To(Equal("too many requests for this gate"))
	g.Eventually(func(g Gomega) string {
		req := getGate(g, ns, "release").Status.Request
		g.Expect(req).NotTo(BeNil())
		return req.Reason
	}, 10*time.Second).Should(Equal("receiver/release-token: release 2"))
	g.Expect(opened(ns, "release")(g)).To(Equal("True"))

	// The caller of a gate whose Secret the receiver never read gets in from there too, and a
	// signed request works as well as the token.
	hotfix := "/gates/" + ns + "/hotfix/open"
	body := requestBody("CVE", time.Now())
	code, msg = postTo(t, url, hotfix, body, withSignature(hotfixToken, body))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "hotfix"), 10*time.Second).Should(Equal("True"))
	code, msg = postTo(t, url, hotfix, requestBody("guess again", time.Now()), withToken("guess"))
	g.Expect(code).To(Equal(429), msg)

	// The token the receiver knows never authenticates on its own: once the Secret is rotated,
	// the old token is refused and the new one taken, still from the same address.
	secret := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "hotfix-token"}, secret)).To(Succeed())
	secret.Data = map[string][]byte{gatingv1.ReceiverTokenKey: []byte("rotated-hotfix-token")}
	g.Expect(k8s.Update(context.Background(), secret)).To(Succeed())
	hotfixClose := "/gates/" + ns + "/hotfix/close"
	code, msg = postTo(t, url, hotfixClose, requestBody("old token", time.Now()), withToken(hotfixToken))
	g.Expect(code).To(Equal(401), msg)
	code, msg = postTo(t, url, hotfixClose, requestBody("new token", time.Now()), withToken("rotated-hotfix-token"))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "hotfix"), 10*time.Second).Should(Equal("False"))
}
