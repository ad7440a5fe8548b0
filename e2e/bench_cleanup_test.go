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
		// With thousands of objects the collection DELETE outlasts the API server's request
		// timeout (a 504, or over HTTP/2 a reset stream) while it goes on deleting: the list
		// emptying is what counts, and the DELETE is sent again while objects are left.
		deleteAll := func() {
			if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
				b.Logf("deleting the benchmark's objects: %v (waiting for them to go)", err)
			}
		}
		deleteAll()
		sent := time.Now()
		g.Eventually(func(g Gomega) int {
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			if n := apimeta.LenList(list); n > 0 && time.Since(sent) > time.Minute {
				deleteAll()
				sent = time.Now()
			}
			return apimeta.LenList(list)
		}, 15*time.Minute, time.Second).Should(BeZero())
	})
}
