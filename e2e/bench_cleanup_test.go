package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		// With thousands of objects the collection DELETE outlasts the API server's request
		// timeout (504) while it goes on deleting: wait for the list to empty all the same.
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); !apierrors.IsTimeout(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Eventually(func(g Gomega) int {
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return apimeta.LenList(list)
		}, 15*time.Minute, time.Second).Should(BeZero())
	})
}
