package fluxsyncs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

const timeout = 15 * time.Second

var (
	kustomization = Kinds[0]
	helmRelease   = Kinds[1]
	automation    = Kinds[2]
)

// specs are minimal valid specs of each kind, as their CRDs require.
var specs = map[string]map[string]any{
	"Kustomization": {"interval": "10m", "prune": true, "path": "./deploy",
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "app"}},
	"HelmRelease":           {"interval": "10m", "chartRef": map[string]any{"kind": "OCIRepository", "name": "podinfo"}},
	"ImageUpdateAutomation": {"interval": "10m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "app"}},
}

// createGate creates a Gate in the given default state; the Gate controller of the test's
// manager evaluates it.
func createGate(t testing.TB, ns, name string, state gatingv1.GateState) {
	t.Helper()
	gate := &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatingv1.GateSpec{Default: state}}
	NewWithT(t).Expect(k8s.Create(context.Background(), gate)).To(Succeed())
	waitGate(t, ns, name, state)
}

// setGate changes the default state of a Gate and waits for its Opened condition to say so.
func setGate(t testing.TB, ns, name string, state gatingv1.GateState) {
	t.Helper()
	gate := &gatingv1.Gate{}
	g := NewWithT(t)
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gate)).To(Succeed())
	patch := client.MergeFrom(gate.DeepCopy())
	gate.Spec.Default = state
	g.Expect(k8s.Patch(context.Background(), gate, patch)).To(Succeed())
	waitGate(t, ns, name, state)
}

func waitGate(t testing.TB, ns, name string, state gatingv1.GateState) {
	t.Helper()
	want := metav1.ConditionFalse
	if state == gatingv1.GateOpened {
		want = metav1.ConditionTrue
	}
	NewWithT(t).Eventually(func(g Gomega) metav1.ConditionStatus {
		gate := &gatingv1.Gate{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gate)).To(Succeed())
		c := apimeta.FindStatusCondition(gate.Status.Conditions, gatesapi.OpenedCondition)
		g.Expect(c).NotTo(BeNil())
		return c.Status
	}, timeout).Should(Equal(want))
}

// createObject creates an object of kind with the gates annotation (none when gates is "") and
// spec.suspend when suspend is true, as its user would.
func createObject(t testing.TB, kind Kind, ns, name, gates string, suspend bool) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": deepCopy(specs[kind.GVK.Kind])}}
	obj.SetGroupVersionKind(kind.GVK)
	obj.SetNamespace(ns)
	obj.SetName(name)
	if gates != "" {
		obj.SetAnnotations(map[string]string{gatesapi.GatesAnnotation: gates})
	}
	if suspend {
		obj.Object["spec"].(map[string]any)["suspend"] = true
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj, client.FieldOwner("user"))).To(Succeed())
	return obj
}

func deepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// read returns the object as stored.
func read(g Gomega, kind Kind, ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kind.GVK)
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	return obj
}

// held is what an observer sees of the gates on an object: "suspend=<spec.suspend>
// marker=<suspended annotation> by=<held-by> since=<set|unset>".
func held(kind Kind, ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := read(g, kind, ns, name)
		suspend, found, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
		s := "suspend=absent"
		if found {
			s = "suspend=" + map[bool]string{true: "true", false: "false"}[suspend]
		}
		a := obj.GetAnnotations()
		since := "unset"
		if _, ok := a[gatesapi.HeldSinceAnnotation]; ok {
			since = "set"
		}
		return s + " marker=" + a[gatesapi.SuspendedAnnotation] + " by=" + a[gatesapi.HeldByAnnotation] + " since=" + since
	}
}

// approved is the Approved condition as "Status|Reason|Message", "" without one.
func approved(kind Kind, ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := read(g, kind, ns, name)
		conds, err := conditionsOf(obj)
		g.Expect(err).NotTo(HaveOccurred())
		c := apimeta.FindStatusCondition(conds, gatesapi.ApprovedCondition)
		if c == nil {
			return ""
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
}

// requestedAt is the object's reconcile.fluxcd.io/requestedAt.
func requestedAt(kind Kind, ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		return read(g, kind, ns, name).GetAnnotations()[meta.ReconcileRequestAnnotation]
	}
}

// eventsOf lists the object's events as "type reason: message".
func eventsOf(kind Kind, ns, name string) func(g Gomega) []string {
	return testenv.EventsOf(k8s, client.ObjectKey{Namespace: ns, Name: name}, kind.GVK.Kind)
}

// suspendManagers are the field managers that own spec.suspend.
func suspendManagers(g Gomega, kind Kind, ns, name string) []string {
	var out []string
	for _, e := range read(g, kind, ns, name).GetManagedFields() {
		if e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"f:suspend"`) {
			out = append(out, e.Manager)
		}
	}
	return out
}

// annotate sets (or, with "", removes) an annotation as `kubectl annotate --overwrite` does.
func annotate(t testing.TB, obj *unstructured.Unstructured, key, value string) {
	t.Helper()
	testenv.Annotate(t, k8s, obj, key, value)
}
