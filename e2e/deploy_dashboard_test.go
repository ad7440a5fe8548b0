package e2e

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The dashboard component, used as deploy/README.md says, adds the dashboard's account,
// Deployment, Service and NetworkPolicy and changes nothing else; the dashboard has no identity
// of its own in the API server: no token mounted, no binding to any role.
func TestDeployDashboardComponent(t *testing.T) {
	g := NewWithT(t)
	defaults := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	objects := buildObjects(t, componentOverlay(t, "dashboard"))
	changed, added := compareObjects(defaults, objects)
	g.Expect(changed).To(BeEmpty())
	g.Expect(added).To(ConsistOf("ServiceAccount/sluice-system/sluice-dashboard", "Deployment/sluice-system/sluice-dashboard",
		"Service/sluice-system/sluice-dashboard", "NetworkPolicy/sluice-system/allow-dashboard"))

	for _, o := range objects {
		switch o.GetKind() {
		case "ServiceAccount":
			if o.GetName() == "sluice-dashboard" {
				sa := &corev1.ServiceAccount{}
				g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, sa)).To(Succeed())
				g.Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
			}
		case "Deployment":
			if o.GetName() == "sluice-dashboard" {
				d := &appsv1.Deployment{}
				g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)).To(Succeed())
				pod := d.Spec.Template.Spec
				g.Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
				g.Expect(pod.Containers).To(HaveLen(1))
				g.Expect(pod.Containers[0].Command).To(Equal([]string{"/usr/local/bin/kubectl-gate"}))
				g.Expect(pod.Containers[0].Args).To(ContainElement("--authenticate-callers"))
			}
		case "RoleBinding", "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b)).To(Succeed())
			for _, s := range b.Subjects {
				g.Expect(s.Name).NotTo(Equal("sluice-dashboard"), "%s %s binds the dashboard", o.GetKind(), o.GetName())
			}
		}
	}
	// Applied on the real node by e2e/node's TestDeployDefault/Dashboard; not here, where the
	// namespace's restricted Pod Security labels would outlive the test in the shared API server.
}
