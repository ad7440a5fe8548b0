package status_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/internal/testapi"
	"github.com/sluice-gitops/sluice/shared/status"
)

// Every state of the object a watcher sees has the Ready condition and the other status fields
// of the same reconcile: the status is written in one request.
func TestPatcherWritesTheStatusInOneRequest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "status-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &testapi.ConsumerList{}, client.InNamespace(ns.Name))
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	obj := &testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app"}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	for _, rev := range []string{"r1", "r2", "r3"} {
		patcher := status.NewPatcher(obj, env.Client)
		obj.Finalizers = []string{"testing.sluice.dev/finalizer"}
		obj.Status.Revision = rev
		conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "Applied revision: %s", rev)
		g.Expect(patcher.Patch(ctx, obj, "status-test")).To(Succeed())
		// A patcher's object is not updated from the server: read it back for the next round.
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	}

	// The watch saw the object created, then each round: every state with a Ready condition
	// names the revision of the status next to it.
	var states []string
	timeout := time.After(10 * time.Second)
	for len(states) == 0 || states[len(states)-1] != "r3|Applied revision: r3" {
		select {
		case ev := <-w.ResultChan():
			g.Expect(ev.Type).NotTo(Equal(watch.Error))
			c := ev.Object.(*testapi.Consumer)
			state := c.Status.Revision + "|"
			if r := conditions.Get(c, meta.ReadyCondition); r != nil {
				state += r.Message
			}
			states = append(states, state)
		case <-timeout:
			t.Fatalf("the watch did not see revision r3; it saw %q", states)
		}
	}
	for _, s := range states {
		rev, msg, _ := strings.Cut(s, "|")
		if msg != "" {
			g.Expect(msg).To(Equal("Applied revision: "+rev), "states: %q", states)
		}
	}
	g.Expect(states).To(ContainElements("r1|Applied revision: r1", "r2|Applied revision: r2"))
}

// The status of an object deleted by the metadata patch of the same round (its last finalizer
// removed) cannot be written: the error is one Gone recognises.
func TestPatcherOnAnObjectGoneWithItsFinalizer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "status-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	obj := &testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app",
		Finalizers: []string{"testing.sluice.dev/finalizer"}}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, obj)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())

	patcher := status.NewPatcher(obj, env.Client)
	obj.Finalizers = nil
	conditions.MarkFalse(obj, meta.ReadyCondition, "Deleting", "deleting")
	err := patcher.Patch(ctx, obj, "status-test")
	g.Expect(err).To(HaveOccurred())
	g.Expect(status.Gone(err)).To(BeTrue(), "%v", err)
}
