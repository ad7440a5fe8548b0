package e2e

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// artifactsLabel opts a namespace in to the source-controller's artifacts (deploy/README.md,
// Network policies).
const artifactsLabel = "source.toolkit.fluxcd.io/artifacts"

// Artifact URLs are signed capabilities; as defence in depth (a leaked URL, or
// --insecure-open-artifacts), deploy/default serves artifacts to the pods of sluice-system and
// of the namespaces labelled source.toolkit.fluxcd.io/artifacts=allow, and to no one else: not a
// tenant's namespace, not a tenant's pod that carries the label itself. deploy/README.md says
// how to label flux-system.
func TestDeployServesArtifactsToTheControllersNamespaceAndLabelledNamespacesOnly(t *testing.T) {
	g := NewWithT(t)
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	var policies []networkingv1.NetworkPolicy
	for _, o := range objects {
		if o.GetKind() == "NetworkPolicy" {
			p := networkingv1.NetworkPolicy{}
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p)).To(Succeed())
			policies = append(policies, p)
		}
	}
	deployments := deploymentsIn(t, objects)
	g.Expect(deployments).To(HaveKey("source-controller"))
	checkArtifactAccess(t, policies, deployments)

	// No peer of the policy admits every namespace: an empty namespaceSelector does.
	for _, p := range policies {
		if p.Name != "allow-artifacts" {
			continue
		}
		for _, rule := range p.Spec.Ingress {
			g.Expect(rule.From).NotTo(BeEmpty(), "a rule without peers admits everyone")
			for _, peer := range rule.From {
				if peer.NamespaceSelector != nil {
					g.Expect(peer.NamespaceSelector.MatchLabels).To(Equal(map[string]string{artifactsLabel: "allow"}))
					g.Expect(peer.NamespaceSelector.MatchExpressions).To(BeEmpty())
				}
			}
		}
	}

	readme, err := os.ReadFile(filepath.Join(env.Root, "deploy", "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(readme)).To(ContainSubstring("kubectl label namespace flux-system "+artifactsLabel+"=allow"),
		"deploy/README.md says how Flux's controllers get artifacts")
}

// checkArtifactAccess evaluates the policies for the artifact port (9090) of each controller's
// pods: only the source-controller serves it, to sluice-system and to labelled namespaces.
func checkArtifactAccess(t *testing.T, policies []networkingv1.NetworkPolicy, deployments map[string]*appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	fromFlux := origin{namespaceLabels: map[string]string{corev1.LabelMetadataName: "flux-system", artifactsLabel: "allow"}}
	fromLabelledPod := origin{namespaceLabels: fromTenant.namespaceLabels, podLabels: map[string]string{artifactsLabel: "allow"}}
	fromOtherValue := origin{namespaceLabels: map[string]string{corev1.LabelMetadataName: "tenant", artifactsLabel: "deny"}}
	for name, d := range deployments {
		pod := d.Spec.Template
		source := name == "source-controller"
		g.Expect(ingressAllowed(policies, pod, 9090, fromSluiceSystem)).To(Equal(source), "%s: artifact port from sluice-system", name)
		g.Expect(ingressAllowed(policies, pod, 9090, fromFlux)).To(Equal(source), "%s: artifact port from a labelled namespace", name)
		g.Expect(ingressAllowed(policies, pod, 9090, fromTenant)).To(BeFalse(), "%s: artifact port from another namespace", name)
		g.Expect(ingressAllowed(policies, pod, 9090, fromLabelledPod)).To(BeFalse(), "%s: artifact port from a labelled pod of another namespace", name)
		g.Expect(ingressAllowed(policies, pod, 9090, fromOtherValue)).To(BeFalse(), "%s: artifact port from a namespace labelled otherwise", name)
	}
	// The pod the Service sends downloads to is the leader's, which has one label more: the
	// policies select it as they select the others.
	if d, ok := deployments["source-controller"]; ok {
		leader := *d.Spec.Template.DeepCopy()
		leader.Labels[artifactServerLabel] = "leader"
		g.Expect(ingressAllowed(policies, leader, 9090, fromSluiceSystem)).To(BeTrue(), "the leader's artifact port from sluice-system")
		g.Expect(ingressAllowed(policies, leader, 9090, fromFlux)).To(BeTrue(), "the leader's artifact port from a labelled namespace")
		g.Expect(ingressAllowed(policies, leader, 9090, fromTenant)).To(BeFalse(), "the leader's artifact port from another namespace")
		g.Expect(ingressAllowed(policies, leader, 8080, fromTenant)).To(BeTrue(), "the leader's metrics from another namespace")
	}
}
