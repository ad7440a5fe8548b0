package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// A template that cannot be rendered stalls the ResourceSet with a message that points at the
// mistake (the template line, the unknown function, the missing key, what is not an object);
// nothing is applied and nothing is pruned: the objects of the last good build stay.
func TestResourceSetBadTemplates(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  inputs:
    - tenant: team1
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.tenant >>
      namespace: NAMESPACE
`)
	readyIn(t, key)
	for _, tc := range []struct{ name, template, message string }{
		{"syntax error", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.tenant\n", "resourcesTemplate:4"},
		{"unknown function", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.tenant | shout >>\n", `function "shout" not defined`},
		{"missing key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.team >>\n", `map has no entry for key "team"`},
		{"not an object", "- apiVersion: v1\n  kind: ConfigMap\n", "resourcesTemplate"},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n", "kind"},
	} {
		updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.ResourcesTemplate = tc.template })
		g.Eventually(rsetCondition(key, meta.StalledCondition), timeout).Should(And(
			HavePrefix("True|BuildFailed|build failed: "), ContainSubstring(tc.message)), tc.name)
		g.Expect(rsetCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|BuildFailed|"), tc.name)
		g.Expect(getObject(g, "v1", "ConfigMap", ns, "team1")).NotTo(BeNil(), tc.name)
		g.Expect(inventoryIDs(g, key)).To(ConsistOf(ns+"_team1__ConfigMap@v1"), tc.name)
	}
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix("Warning BuildFailed: build failed: ")))

	// Fixed: ready again, the Stalled condition goes.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.ResourcesTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.tenant >>-v2\n  namespace: " + ns + "\n"
	})
	readyIn(t, key)
	g.Expect(rsetCondition(key, meta.StalledCondition)(g)).To(Equal(""))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "team1")).To(BeNil())
}
