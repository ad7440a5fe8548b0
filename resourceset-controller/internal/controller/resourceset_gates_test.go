package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// spec.gates: a new ResourceSet behind a closed gate applies nothing (Ready=False, GateClosed);
// once applied, a closed gate holds changes of the spec (Blocked=True) while drift of what was
// applied is still corrected (a manual edit is put back to the last applied version, not to the
// held one); opening the gate releases the change at once.
func TestResourceSetGates(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	gatestest.SetOpened(t, k8s, ns, "change-freeze", false)
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  gates:
    require: all
    refs: [change-freeze]
  inputs:
    - version: "1"
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app
        namespace: NAMESPACE
      data:
        version: << inputs.version | quote >>
`)
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(HavePrefix("False|GateClosed|Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed"))
	g.Expect(rsetCondition(key, gatesapi.BlockedCondition)(g)).To(HavePrefix("True|GateClosed|"))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app")).To(BeNil())

	gatestest.SetOpened(t, k8s, ns, "change-freeze", true)
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app").Object["data"]).To(HaveKeyWithValue("version", "1"))
	g.Expect(rsetCondition(key, gatesapi.BlockedCondition)(g)).To(Equal(""))

	// Closed again: a new version waits...
	gatestest.SetOpened(t, k8s, ns, "change-freeze", false)
	g.Eventually(rsetCondition(key, gatesapi.BlockedCondition), timeout).Should(HavePrefix("True|GateClosed|"))
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Inputs[0]["version"].Raw = []byte(`"2"`)
	})
	g.Eventually(func(g Gomega) int64 { return getResourceSet(g, key).Status.ObservedGeneration }, timeout).Should(Equal(getResourceSet(g, key).Generation))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app").Object["data"]).To(HaveKeyWithValue("version", "1"))
	g.Expect(rsetCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("True|"), "still ready with what it applied")

	// ...while drift of what was applied is still corrected.
	editConfigMap(t, ns, "app", "version", "edited")
	poke(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "app").Object["data"] }, timeout).Should(
		HaveKeyWithValue("version", "1"))
	g.Eventually(rsetCondition(key, gatesapi.BlockedCondition), timeout).Should(HavePrefix("True|GateClosed|"))

	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Inputs[0]["version"].Raw = []byte(`"3"`)
	})
	gatestest.SetOpened(t, k8s, ns, "change-freeze", true)
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "app").Object["data"] }, timeout).Should(
		HaveKeyWithValue("version", "3"))
	g.Eventually(rsetCondition(key, gatesapi.BlockedCondition), timeout).Should(Equal(""))
	// The log line of docs/resourceset.md: the gates considered and their status.
	g.Expect(strings.Join(logs.Lines(), "\n")).To(ContainSubstring(`"gates":{"require":"all","status":[{"closed":"false","gate":"change-freeze"}]}`))
}

// editConfigMap changes a key of a ConfigMap as a person with kubectl edit would.
func editConfigMap(t *testing.T, ns, name, k, v string) {
	t.Helper()
	g := NewWithT(t)
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	cm.Data[k] = v
	g.Expect(k8s.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
}
