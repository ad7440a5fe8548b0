package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Inputs from a ConfigMap and a Secret (flux-operator #1027), read as the ResourceSet's account:
// each object is one input made of its data; a Secret the account may not read makes the
// ResourceSet wait, saying so, with what it applied before.
func TestResourceSetInputsFromConfigMapsAndSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limited"}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limited"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"allowed"}, Verbs: []string{"get"}},
	}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limited"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "limited"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "limited"},
	})).To(Succeed())
	g.Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"},
		Data: map[string]string{"region": "eu-west-1"}})).To(Succeed())
	for _, name := range []string{"allowed", "forbidden"} {
		g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{"token": []byte(name + "-t0ken")}})).To(Succeed())
	}

	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: from-data
spec:
  serviceAccountName: limited
  inputStrategy:
    name: Permute
  inputsFrom:
    - apiVersion: v1
      kind: ConfigMap
      name: settings
    - kind: Secret
      name: allowed
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: rendered
    data:
      region: << inputs.settings.region >>
      token: << inputs.allowed.token >>
`)
	readyIn(t, key)
	rendered := getObject(g, "v1", "ConfigMap", ns, "rendered")
	g.Expect(rendered).NotTo(BeNil())
	g.Expect(rendered.Object["data"]).To(Equal(map[string]any{"region": "eu-west-1", "token": "allowed-t0ken"}))

	// A Secret the account may not read: the ResourceSet waits and keeps what it applied.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.InputsFrom[1].Name = "forbidden"
		rs.Spec.ResourcesTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"
	})
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|DependencyNotReady|Secret '"+ns+"/forbidden' cannot be read by the ResourceSet's account: "),
		ContainSubstring(`User "system:serviceaccount:`+ns+`:limited" cannot get resource "secrets"`)))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "rendered")).NotTo(BeNil())
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "other")).To(BeNil())
	g.Expect(eventsOf(key)(g)).NotTo(ContainElement(ContainSubstring("forbidden-t0ken")))
}
