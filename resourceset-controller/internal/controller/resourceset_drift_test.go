package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// A manual edit of a generated object is drift: the next reconcile puts it back and the
// ApplySucceeded event says the object was configured; a deleted object is created again. An immutable field change fails with
// the API server's message until fluxcd.controlplane.io/force recreates the object.
func TestResourceSetCorrectsDriftAndForces(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  inputs:
    - value: "1"
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app
        namespace: NAMESPACE
      immutable: true
      data:
        value: << inputs.value | quote >>
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: settings
        namespace: NAMESPACE
      data:
        mode: strict
`)
	readyIn(t, key)
	editConfigMap(t, ns, "settings", "mode", "lax")
	poke(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "settings").Object["data"] }, timeout).Should(
		HaveKeyWithValue("mode", "strict"))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal ApplySucceeded: ConfigMap/" + ns + "/settings configured"))

	// Deleted by hand: created again.
	g.Expect(k8s.Delete(t.Context(), getObject(g, "v1", "ConfigMap", ns, "settings"))).To(Succeed())
	poke(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "settings") }, timeout).ShouldNot(BeNil())
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal ApplySucceeded: ConfigMap/" + ns + "/settings created"))

	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.Inputs[0]["value"].Raw = []byte(`"2"`) })
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|ReconciliationFailed|"), ContainSubstring("ConfigMap/"+ns+"/app"), ContainSubstring("immutable")))

	annotate(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)}, rsv1.ForceAnnotation, rsv1.EnabledValue)
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app").Object["data"]).To(HaveKeyWithValue("value", "2"))
}

// fluxcd.controlplane.io/reconcile: disabled pauses a ResourceSet: changes are not applied,
// and deleting it leaves its objects in place.
func TestResourceSetDisabled(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app
        namespace: NAMESPACE
      data:
        v: "1"
`)
	readyIn(t, key)
	annotate(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)}, rsv1.ReconcileAnnotation, rsv1.DisabledValue)
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Resources[0].Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"` + ns + `"},"data":{"v":"2"}}`)
	})
	poke(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})
	g.Eventually(func(g Gomega) string { return getResourceSet(g, key).Status.LastHandledReconcileAt }, timeout).Should(HavePrefix("poke-"))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app").Object["data"]).To(HaveKeyWithValue("v", "1"))

	g.Expect(k8s.Delete(t.Context(), &rsv1.ResourceSet{ObjectMeta: metaOf(key)})).To(Succeed())
	g.Eventually(func() error { return k8s.Get(t.Context(), key, &rsv1.ResourceSet{}) }, timeout).ShouldNot(Succeed())
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app")).NotTo(BeNil())
}
