package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deleteWhenDone deletes, when the benchmark ends and while its controller still runs (it
// handles the finalizers), the objects of obj's kind in ns, and waits until list finds none
// left: the next benchmark's controller starts with nothing of this one to reconcile. Register
// it after the controller, whose stop runs later.
func deleteWhenDone(b testing.TB, c client.Client, obj client.Object, list client.ObjectList, ns string) {
	b.Cleanup(func() {
		ctx := context.Background()
		g := NewWithT(b)
		g.Expect(c.DeleteAllOf(ctx, obj, client.InNamespace(ns))).To(Succeed())
		g.Eventually(func(g Gomega) int {
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return apimeta.LenList(list)
		}, 2*time.Minute, 100*time.Millisecond).Should(BeZero())
	})
}
