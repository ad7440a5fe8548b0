package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A garbage collection that fails is PruneFailed, as for a ManifestGeneration (one lifecycle):
// here the account may apply ConfigMaps but not delete them. The object stays, and the
// inventory still lists it, so the next attempt deletes it once the account may.
func TestResourceSetPruneFailed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newBareNamespace(t)
	g.Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}})).To(Succeed())
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"}}},
	}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
	})).To(Succeed())

	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  serviceAccountName: deployer
  inputs:
    - name: one
    - name: two
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: << inputs.name >>
        namespace: NAMESPACE
`)
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "two")).NotTo(BeNil())

	rset := getResourceSet(g, key)
	rset.Spec.Inputs = rset.Spec.Inputs[:1]
	g.Expect(k8s.Update(ctx, rset)).To(Succeed())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|PruneFailed|"), ContainSubstring(`cannot delete resource "configmaps"`)))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "two")).NotTo(BeNil())

	// Allowed to delete, the retry removes it.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(role), role)).To(Succeed())
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	g.Expect(k8s.Update(ctx, role)).To(Succeed())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "two")).To(BeNil())
}
