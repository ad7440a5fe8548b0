package gatereceiver

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// Two replicas behind one Service share their replay memory through the API: a request accepted
// by one is refused (409) by the other, and changes nothing; a new request goes through either.
func TestReceiverReplicasRefuseEachOthersReplays(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	controllerNS := env.Namespace(t)
	const token = "replicated-token"
	newReceiverGate(t, ns, "release", token)
	replica := func(name string) string {
		srv := newServer(Limits{})
		srv.Claims = &webhook.Claims{Client: k8s, Reader: k8s, Namespace: controllerNS, Holder: name, Kind: "receiver"}
		return startReplica(t, srv)
	}
	a, b := replica("a"), replica("b")

	openBody := requestBody("deploy", time.Now())
	code, msg := postTo(t, a, "/gates/"+ns+"/release/open", openBody, withSignature(token, openBody))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))
	code, msg = postTo(t, b, "/gates/"+ns+"/release/close", requestBody("incident", time.Now()), withToken(token))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("False"))
	before := requestAnnotations(g, ns, "release")

	// The captured open, sent to the replica that did not see it.
	code, msg = postTo(t, b, "/gates/"+ns+"/release/open", openBody, withSignature(token, openBody))
	g.Expect(code).To(Equal(409), msg)
	g.Expect(msg).To(Equal("this request was already received: send a new timestamp"))
	g.Consistently(func(g Gomega) map[string]string { return requestAnnotations(g, ns, "release") }, 2*time.Second).Should(Equal(before))

	// One claim per accepted request, in the controller's namespace.
	var leases coordinationv1.LeaseList
	g.Expect(k8s.List(context.Background(), &leases, client.InNamespace(controllerNS))).To(Succeed())
	g.Expect(leases.Items).To(HaveLen(2))
}

// A claim holds its window, then is swept, and a claim past its window is taken again.
func TestClaimsWindow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := &webhook.Claims{Client: k8s, Reader: k8s, Namespace: env.Namespace(t), Holder: "a", Kind: "receiver"}
	key := sha256.Sum256([]byte("a request"))
	now := time.Now()
	count := func() int {
		var leases coordinationv1.LeaseList
		g.Expect(k8s.List(ctx, &leases, client.InNamespace(c.Namespace))).To(Succeed())
		return len(leases.Items)
	}

	replay, err := c.Claim(ctx, key, now, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay).To(BeFalse())
	replay, err = c.Claim(ctx, key, now.Add(59*time.Second), time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay).To(BeTrue())
	// Past the window, the same key is claimed anew.
	replay, err = c.Claim(ctx, key, now.Add(61*time.Second), time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay).To(BeFalse())

	// The sweep keeps what is in its window and deletes the rest.
	g.Expect(c.Sweep(ctx, now.Add(90*time.Second))).To(Succeed())
	g.Expect(count()).To(Equal(1))
	g.Expect(c.Sweep(ctx, now.Add(3*time.Minute))).To(Succeed())
	g.Expect(count()).To(Equal(0))

	// A released claim (a request that was not written) may be sent again.
	_, err = c.Claim(ctx, key, now, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Release(ctx, key)).To(Succeed())
	replay, err = c.Claim(ctx, key, now, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay).To(BeFalse())
}
