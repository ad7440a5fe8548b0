package scenarios

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// teamsSet makes a namespace per input, with a ConfigMap in it.
const teamsSet = `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: teams
spec:
  serviceAccountName: applier
  inputs:
    - team: one
    - team: two
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: controlplane-<< inputs.team >>
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: team
        namespace: controlplane-<< inputs.team >>
      data:
        team: << inputs.team >>
`

// The system's kube-controller-manager finishes what the controllers start: a namespace a
// ResourceSet no longer makes is deleted for good (not left Terminating, with what others put in
// it), and the dependents of a deleted owner are garbage-collected.
func TestScenarioControlPlaneFinishesDeletions(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "controlplane")
	g := s.g
	ctx := context.Background()
	entries := func(teams ...string) []string {
		var ids []string
		for _, team := range teams {
			ns := "controlplane-" + team
			ids = append(ids, "_"+ns+"__Namespace", ns+"_team__ConfigMap")
		}
		return ids
	}
	for _, team := range []string{"one", "two"} {
		s.watchNamespace("controlplane-" + team)
	}
	// The account of the ResourceSet makes the teams' namespaces and what goes in them.
	s.clusterRole("teams", true, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})
	rset := s.create(teamsSet)[0]
	settled(g, resourceSetGVK, s.ns, "teams", HavePrefix("True|ReconciliationSucceeded|"), inventoryOf(entries("one", "two")))
	// An object the ResourceSet does not manage: the namespace controller deletes it with its
	// namespace.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "controlplane-one", Name: "other"}}
	g.Expect(k8s().Create(ctx, other)).To(Succeed())

	setInputs(g, rset, []any{map[string]any{"team": "two"}})
	settled(g, resourceSetGVK, s.ns, "teams", HavePrefix("True|ReconciliationSucceeded|"), inventoryOf(entries("two")))
	g.Eventually(func() error {
		return k8s().Get(ctx, client.ObjectKey{Name: "controlplane-one"}, &corev1.Namespace{})
	}, timeout).Should(Satisfy(apierrors.IsNotFound), "the namespace of the removed input is gone, not Terminating")
	g.Expect(k8s().Get(ctx, client.ObjectKey{Name: "controlplane-two"}, &corev1.Namespace{})).To(Succeed())
	g.Expect(mustObject(g, configMapGVK, "controlplane-two", "team").Object["data"]).To(Equal(map[string]any{"team": "two"}))

	// An owner deleted in the background: its dependent goes after it. Deleted in the
	// foreground: it goes only after its dependent (the garbage collector removes its
	// foregroundDeletion finalizer).
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		name := "owner-" + strings.ToLower(string(policy))
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
		g.Expect(k8s().Create(ctx, owner)).To(Succeed())
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.ns, Name: "dependent-of-" + name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}
		g.Expect(k8s().Create(ctx, dependent)).To(Succeed())
		g.Expect(k8s().Delete(ctx, owner, client.PropagationPolicy(policy))).To(Succeed())
		for _, obj := range []*corev1.ConfigMap{dependent, owner} {
			g.Eventually(func() error {
				return k8s().Get(ctx, client.ObjectKeyFromObject(obj), &corev1.ConfigMap{})
			}, timeout).Should(Satisfy(apierrors.IsNotFound), "%s deletion: %s is garbage-collected", policy, obj.Name)
		}
	}
}
