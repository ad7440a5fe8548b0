package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spec.serviceAccountName: objects are applied as that account. An account allowed to manage
// ConfigMaps in its namespace applies a ConfigMap; asked for a Namespace (cluster-scoped) it is refused, and the
// condition says who was refused what. A missing account is named.
func TestResourceSetImpersonation(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createDeployer(t, ns, "*")

	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  serviceAccountName: deployer
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app
        namespace: NAMESPACE
`)
	readyIn(t, key)
	cm := getObject(g, "v1", "ConfigMap", ns, "app")
	g.Expect(cm).NotTo(BeNil())
	g.Expect(cm.GetManagedFields()).To(ContainElement(HaveField("Manager", ControllerName)))

	forbidden := createResourceSet(t, ns, `
metadata:
  name: escalate
spec:
  serviceAccountName: deployer
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: NAMESPACE-stolen
`)
	g.Eventually(rsetCondition(forbidden, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|ReconciliationFailed|"),
		ContainSubstring(`User "system:serviceaccount:`+ns+`:deployer" cannot`),
		ContainSubstring("namespaces")))
	g.Expect(getObject(g, "v1", "Namespace", "", ns+"-stolen")).To(BeNil())

	// Outside the controller's namespace a ResourceSet without an account runs as the
	// --default-service-account ("tenant"), which this namespace does not have.
	locked := createResourceSet(t, ns, `
metadata:
  name: locked
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: locked
        namespace: NAMESPACE
`)
	g.Eventually(rsetCondition(locked, meta.ReadyCondition), timeout).Should(Equal(
		"False|ReconciliationFailed|ServiceAccount '" + ns + "/tenant' does not exist: create it or set spec.serviceAccountName"))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "locked")).To(BeNil())
}

// In the controller's own namespace, a ResourceSet without an account runs with the
// controller's permissions (the --default-service-account lockdown exemption of docs/resourceset.md).
func TestResourceSetInControllerNamespace(t *testing.T) {
	g := NewWithT(t)
	key := createResourceSet(t, controllerNamespace, `
metadata:
  name: platform
spec:
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: platform-team
`)
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "Namespace", "", "platform-team")).NotTo(BeNil())
}

// createDeployer creates the ServiceAccount "deployer" in ns, allowed verbs on the ConfigMaps of
// ns by the Role "configmaps" (a namespaced role: the aggregated "edit" ClusterRole needs a
// controller-manager, which the test control plane does not run). It returns the Role.
func createDeployer(t *testing.T, ns string, verbs ...string) *rbacv1.Role {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}})).To(Succeed())
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}},
	}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
	})).To(Succeed())
	return role
}
