package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// A change freeze on a provider: while its gate is closed, new inputs are not exported (the
// ResourceSets that use it keep the last ones); the provider says which revision waits, and the
// Held and Released events say when; opening the gate exports them at once.
func TestInputProviderGatesHoldNewInputs(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	gatestest.SetOpened(t, k8s, ns, "change-freeze", true)
	obj := rsipCreate(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: settings
spec:
  type: Static
  gates:
    refs: [change-freeze]
  defaultValues:
    version: "1"
`)
	key := client.ObjectKeyFromObject(obj)
	first := rsipReady(t, key).Status.LastExportedRevision

	gatestest.SetOpened(t, k8s, ns, "change-freeze", false)
	g.Eventually(rsipCondition(key, gatesapi.BlockedCondition), timeout).Should(HavePrefix("True|GateClosed|"))
	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) { p.Spec.DefaultValues["version"].Raw = []byte(`"2"`) })
	var waiting string
	g.Eventually(func(g Gomega) string {
		p := rsipGet(g, key)
		g.Expect(p.Status.Gates).NotTo(BeNil())
		waiting = p.Status.Gates.WaitingRevision
		return waiting
	}, timeout).ShouldNot(BeEmpty())
	p := rsipGet(g, key)
	g.Expect(p.Status.LastExportedRevision).To(Equal(first), "the last exported inputs stay")
	g.Expect(rsipInputs(g, p)[0]).To(HaveKeyWithValue("version", "1"))
	g.Expect(p.Status.Gates.State).To(Equal("closed (change-freeze)"))
	g.Eventually(rsipCondition(key, meta.ReadyCondition), timeout).Should(MatchRegexp(
		`^True\|ReconciliationSucceeded\|Reconciliation finished in .*; revision '` + waiting + `' waits for the gates: closed \(change-freeze\)$`))
	g.Eventually(rsipEventMessages(key), timeout).Should(ContainElement(
		"Normal Held: Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed."))

	gatestest.SetOpened(t, k8s, ns, "change-freeze", true)
	g.Eventually(func(g Gomega) string { return rsipGet(g, key).Status.LastExportedRevision }, timeout).Should(Equal(waiting))
	g.Expect(rsipInputs(g, rsipGet(g, key))[0]).To(HaveKeyWithValue("version", "2"))
	g.Eventually(rsipEventMessages(key), timeout).Should(ContainElement(HavePrefix("Normal Released: released by its gates after waiting ")))
	g.Expect(rsipCondition(key, gatesapi.BlockedCondition)(g)).To(BeEmpty())
}
