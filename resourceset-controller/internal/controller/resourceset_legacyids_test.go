package controller

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// A Permute ResourceSet whose objects an earlier Sluice named after its combination ids keeps
// those ids after the upgrade: its objects are updated in place, none is deleted and recreated
// under flux-operator's ids.
func TestResourceSetKeepsLegacyPermuteIDs(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	ctx := context.Background()
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: matrix
  annotations:
    fluxcd.controlplane.io/reconcile: disabled
spec:
  inputStrategy:
    name: Permute
  inputs:
    - tenant: a
    - tenant: b
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: m-<< inputs.id >>
    data:
      tenant: << inputs.matrix.tenant >>
`)
	// What the earlier Sluice applied: one ConfigMap per combination, named after its id.
	own := inputs.Group{APIVersion: rsv1.GroupVersion.String(), Kind: rsv1.ResourceSetKind, Namespace: ns, Name: "matrix",
		Inputs: []map[string]any{{"tenant": "a"}, {"tenant": "b"}}}
	combos, err := inputs.Combine(rsv1.InputStrategyPermute, own, nil, false, 0)
	g.Expect(err).NotTo(HaveOccurred())
	inputs.LegacyPermuteIDs(combos, own, nil)
	uids := map[string]types.UID{}
	var entries []rsv1.ResourceRef
	for _, c := range combos {
		name := fmt.Sprintf("m-%s", c["id"])
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			"resourceset.fluxcd.controlplane.io/name": "matrix", "resourceset.fluxcd.controlplane.io/namespace": ns}},
			Data: map[string]string{"tenant": "old"}}
		g.Expect(k8s.Create(ctx, cm)).To(Succeed())
		uids[name] = cm.UID
		entries = append(entries, rsv1.ResourceRef{ID: ns + "_" + name + "__ConfigMap", Version: "v1"})
	}
	// The controller writes the paused ResourceSet's status too: retry on conflicts.
	g.Eventually(func() error {
		obj := &rsv1.ResourceSet{}
		if err := k8s.Get(ctx, key, obj); err != nil {
			return err
		}
		obj.Status.Inventory = &rsv1.ResourceInventory{Entries: entries}
		return k8s.Status().Update(ctx, obj)
	}, timeout).Should(Succeed())

	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { delete(rs.Annotations, rsv1.ReconcileAnnotation) })
	readyIn(t, key)
	for name, uid := range uids {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
		g.Expect(cm.UID).To(Equal(uid), "%s is the object applied before, not a new one", name)
		g.Expect(cm.Data["tenant"]).To(BeElementOf("a", "b"))
	}
	list := &corev1.ConfigMapList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.HasLabels{"resourceset.fluxcd.controlplane.io/name"})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "no object under flux-operator's ids")
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "m-"+inputs.ID("matrix=0"))).To(BeNil())
}

// A Permute ResourceSet created under flux-operator's ids keeps them.
func TestResourceSetPermuteIDsAreFluxOperators(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: matrix
spec:
  inputStrategy:
    name: Permute
  inputs:
    - tenant: a
    - tenant: b
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: m-<< inputs.id >>
    data:
      tenant: << inputs.matrix.tenant >>
`)
	readyIn(t, key)
	for i, tenant := range []string{"a", "b"} {
		cm := getObject(g, "v1", "ConfigMap", ns, "m-"+inputs.ID(fmt.Sprintf("matrix=%d", i)))
		g.Expect(cm).NotTo(BeNil())
		g.Expect(cm.Object["data"]).To(Equal(map[string]any{"tenant": tenant}))
	}
}
