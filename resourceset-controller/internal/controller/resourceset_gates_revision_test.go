package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// A gate approved for one revision (status.openedForRevision) lets a ResourceSet apply that
// revision only: a newer revision waits for its own approval while what the approved one
// applied stays.
func TestResourceSetGateApprovedForARevision(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	gatestest.SetOpened(t, k8s, ns, "release", false)
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  gates:
    refs: [release]
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
	waitingRevision := func(g Gomega) string {
		st := getResourceSet(g, key).Status.Gates
		if st == nil {
			return ""
		}
		return st.WaitingRevision
	}
	g.Eventually(waitingRevision, timeout).ShouldNot(BeEmpty())
	r1 := waitingRevision(g)

	// Approved for r1: r1 is applied.
	gatestest.SetOpenedForRevision(t, k8s, ns, "release", r1)
	readyIn(t, key)
	g.Expect(getResourceSet(g, key).Status.LastAppliedRevision).To(Equal(r1))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app").Object["data"]).To(HaveKeyWithValue("version", "1"))
	g.Expect(rsetCondition(key, gatesapi.BlockedCondition)(g)).To(Equal(""))

	// A newer revision waits for its own approval; what r1 applied stays.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Inputs[0]["version"].Raw = []byte(`"2"`)
	})
	g.Eventually(waitingRevision, timeout).ShouldNot(BeEmpty())
	n2 := waitingRevision(g)
	g.Expect(n2).NotTo(Equal(r1))
	blocked := "Reconciliation is blocked as revision '" + n2 + "' waits for its own approval (gate '" + ns +
		"/release' is approved for revision '" + r1 + "')."
	g.Eventually(rsetCondition(key, gatesapi.BlockedCondition), timeout).Should(Equal("True|GateClosed|" + blocked))
	g.Expect(getResourceSet(g, key).Status.Gates.State).To(Equal("closed (release)"))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(ContainSubstring("Held: " + blocked)))
	g.Expect(rsetCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("True|"), "still ready with what r1 applied")
	g.Consistently(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "app").Object["data"] }, "2s").Should(
		HaveKeyWithValue("version", "1"))
	g.Expect(getResourceSet(g, key).Status.LastAppliedRevision).To(Equal(r1))

	// Its own approval applies it.
	gatestest.SetOpenedForRevision(t, k8s, ns, "release", n2)
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "app").Object["data"] }, timeout).Should(
		HaveKeyWithValue("version", "2"))
	g.Eventually(rsetCondition(key, gatesapi.BlockedCondition), timeout).Should(Equal(""))
	g.Expect(getResourceSet(g, key).Status.LastAppliedRevision).To(Equal(n2))
}
