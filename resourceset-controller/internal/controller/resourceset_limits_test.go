package controller

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// A template over one of the builder's limits (docs/resourceset.md, "Limits") fails like a
// template error: Ready=False and Stalled, reason BuildFailed, with a message naming the limit.
// Nothing is applied and nothing is pruned: the objects, the inventory and the last applied
// revision of the last good build stay. A build cut short by reconcileTimeout says so, and is
// retried rather than stalled.
func TestResourceSetTemplateLimits(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	const template = `apiVersion: v1
kind: ConfigMap
metadata:
  name: << inputs.tenant >>
  namespace: NAMESPACE
data:
  padding: << repeat 3 "x" | quote >>
`
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  inputs:
    - tenant: team1
  resourcesTemplate: |
`+indentLines(template, "    "))
	readyIn(t, key)
	inventory := inventoryIDs(g, key)
	g.Expect(inventory).To(ConsistOf(ns + "_team1__ConfigMap@v1"))
	revision := getResourceSet(g, key).Status.LastAppliedRevision

	keptAsItWas := func(name string) {
		t.Helper()
		cm := getObject(g, "v1", "ConfigMap", ns, "team1")
		g.Expect(cm).NotTo(BeNil(), name)
		g.Expect(cm.Object["data"]).To(Equal(map[string]any{"padding": "xxx"}), name)
		g.Expect(inventoryIDs(g, key)).To(Equal(inventory), name)
		g.Expect(getResourceSet(g, key).Status.LastAppliedRevision).To(Equal(revision), name)
	}

	// repeat over its limit: refused before anything is allocated.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.ResourcesTemplate = strings.ReplaceAll(strings.Replace(template, "repeat 3", "repeat 300000000", 1), "NAMESPACE", ns)
	})
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|BuildFailed|build failed: inputs[0]: template: resourcesTemplate:7:"),
		HaveSuffix("error calling repeat: count 300000000 is over the limit of 1000000")))
	g.Expect(rsetCondition(key, meta.StalledCondition)(g)).To(HavePrefix("True|BuildFailed|"))
	keptAsItWas("repeat")
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(And(HavePrefix("Warning BuildFailed: build failed: "),
		HaveSuffix(`at <repeat 300000000 "x">: error calling repeat: count 300000000 is over the limit of 1000000`))))

	// A build longer than reconcileTimeout (nine million loop iterations, each calling a
	// function) is interrupted at the timeout; the next try may be luckier, so it is not stalled.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Annotations = map[string]string{rsv1.ReconcileTimeoutAnnotation: "1s"}
		rs.Spec.ResourcesTemplate = "<< range until 3000 >><< range until 3000 >><< $x := add 1 2 >><< end >><< end >>\n" +
			strings.ReplaceAll(template, "NAMESPACE", ns)
	})
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|BuildFailed|build failed: not finished within the timeout of 1s (fluxcd.controlplane.io/reconcileTimeout): "),
		HaveSuffix("build interrupted: context deadline exceeded")))
	g.Expect(rsetCondition(key, meta.StalledCondition)(g)).To(Equal(""))
	keptAsItWas("timeout")

	// Fixed: ready again, and the next build applies.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Annotations = nil
		rs.Spec.ResourcesTemplate = strings.ReplaceAll(strings.Replace(template, "repeat 3", "repeat 4", 1), "NAMESPACE", ns)
	})
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "team1").Object["data"]).To(Equal(map[string]any{"padding": "xxxx"}))
}

// indentLines prefixes every line of text.
func indentLines(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
