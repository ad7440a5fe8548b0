// Package statustest checks, in the tests of each controller, that its kinds follow the start
// every reconciler shares (shared/status.Preamble), on its running controller.
package statustest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// RulesKind is one kind for CheckRules: a new object and what the kind has of the start every
// reconciler shares (shared/status.Preamble).
type RulesKind struct {
	// New returns a new object of the kind named name in namespace ns, valid, not suspended.
	New func(ns, name string) client.Object
	// Finalizer the kind adds; "" for a kind that has none.
	Finalizer string
	// Suspend suspends obj (spec.suspend, or the kind's annotation); nil for a kind that cannot be
	// suspended.
	Suspend func(obj client.Object)
}

// CheckRules checks, on the running controller of one kind, the rules every reconciler follows
// (README, One reconcile lifecycle):
//   - a new generation is Reconciling=True, Ready=Unknown, reason Progressing, before it is
//     reconciled (seen by a watcher: the steps end it);
//   - reconcile.fluxcd.io/requestedAt is echoed in status.lastHandledReconcileAt;
//   - the finalizer is added, also to an object created suspended;
//   - a suspended object echoes requestedAt too, and is not Reconciling.
//
// The objects are created in a namespace of their own.
func CheckRules(t *testing.T, c client.Client, cfg *rest.Config, k RulesKind) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rules-"}}
	g.Expect(c.Create(ctx, namespace)).To(Succeed())
	ns := namespace.Name
	obj := k.New(ns, "rules")
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	g.Expect(err).NotTo(HaveOccurred())

	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: c.Scheme(), Mapper: c.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	w, err := wc.Watch(ctx, list, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	g.Expect(c.Create(ctx, obj)).To(Succeed())
	progressing := "True|Progressing|Reconciliation in progress"
	seen := waitFor(t, w, obj.GetName(), func(u *unstructured.Unstructured) bool {
		return condition(u, meta.ReconcilingCondition) == progressing
	})
	g.Expect(condition(seen, meta.ReadyCondition)).To(Equal("Unknown|Progressing|Reconciliation in progress"))
	g.Expect(seen.GetGeneration()).To(Equal(int64(1)))

	v := testenv.Poke(t, c, obj)
	g.Eventually(func(g Gomega) string { return lastHandled(g, c, obj) }, 30*time.Second).Should(Equal(v), "requestedAt echoed")
	if k.Finalizer != "" {
		g.Expect(controllerutil.ContainsFinalizer(obj, k.Finalizer)).To(BeTrue(), "finalizer")
	}
	if k.Suspend == nil {
		return
	}

	// Suspended: the request echoed, nothing tried.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		k.Suspend(obj)
		return c.Update(ctx, obj)
	})).To(Succeed())
	v = testenv.Poke(t, c, obj)
	g.Eventually(func(g Gomega) string { return lastHandled(g, c, obj) }, 30*time.Second).Should(Equal(v), "requestedAt echoed while suspended")
	g.Expect(condition(toUnstructured(g, obj), meta.ReconcilingCondition)).To(BeEmpty(), "a suspended object is not Reconciling")

	// Created suspended: the finalizer comes before the suspension.
	suspended := k.New(ns, "rules-suspended")
	k.Suspend(suspended)
	suspended.SetAnnotations(mergeAnnotations(suspended.GetAnnotations(), meta.ReconcileRequestAnnotation, "created"))
	g.Expect(c.Create(ctx, suspended)).To(Succeed())
	g.Eventually(func(g Gomega) string { return lastHandled(g, c, suspended) }, 30*time.Second).Should(Equal("created"))
	if k.Finalizer != "" {
		g.Expect(controllerutil.ContainsFinalizer(suspended, k.Finalizer)).To(BeTrue(), "finalizer of an object created suspended")
	}
	g.Expect(condition(toUnstructured(g, suspended), meta.ReconcilingCondition)).To(BeEmpty())
}

// waitFor returns the first state of the object named name that the watch delivers and that
// matches.
func waitFor(t *testing.T, w watch.Interface, name string, match func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	timeout := time.After(30 * time.Second)
	var states []string
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended; it saw %q", states)
			}
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || u.GetName() != name {
				continue
			}
			if match(u) {
				return u
			}
			states = append(states, fmt.Sprintf("generation %d: Reconciling %q", u.GetGeneration(), condition(u, meta.ReconcilingCondition)))
		case <-timeout:
			t.Fatalf("no matching state of %s; the watch saw %q", name, states)
		}
	}
}

// lastHandled reads obj and returns its status.lastHandledReconcileAt.
func lastHandled(g Gomega, c client.Client, obj client.Object) string {
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	v, _, _ := unstructured.NestedString(toUnstructured(g, obj).Object, "status", "lastHandledReconcileAt")
	return v
}

func toUnstructured(g Gomega, obj client.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())
	return &unstructured.Unstructured{Object: m}
}

// condition is "status|reason|message" of a condition of u, "" when absent.
func condition(u *unstructured.Unstructured, t string) string {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range list {
		if c, ok := item.(map[string]any); ok && c["type"] == t {
			return fmt.Sprintf("%v|%v|%v", c["status"], c["reason"], c["message"])
		}
	}
	return ""
}

func mergeAnnotations(a map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range a {
		out[key] = val
	}
	return out
}
