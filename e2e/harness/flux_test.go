package harness

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The Flux CRDs of bin/crds are real and served: a minimal HelmRelease (helm.toolkit.fluxcd.io/v2)
// and ImageUpdateAutomation (image.toolkit.fluxcd.io/v1) pass their schemas and read back with
// spec.suspend as written, and a Kustomization (kustomize.toolkit.fluxcd.io/v1) too.
func TestFluxCRDsAreServed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	g.Expect(InstallFluxCRDs(env.Config, env.Environment.BinaryAssetsDirectory)).To(Succeed())
	ns := env.Namespace(t)

	for _, manifest := range []string{`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
spec:
  interval: 10m
  suspend: false
  chartRef:
    kind: OCIRepository
    name: podinfo
`, `
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata:
  name: podinfo
spec:
  interval: 10m
  suspend: false
  sourceRef:
    kind: GitRepository
    name: podinfo
  git:
    commit:
      author:
        email: fluxcdbot@example.com
  update:
    path: ./clusters/dev
    strategy: Setters
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
spec:
  interval: 10m
  suspend: false
  prune: true
  sourceRef:
    kind: GitRepository
    name: podinfo
`} {
		obj := testenv.FromYAML(t, ns, manifest)
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed(), "%s", obj.GetKind())
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		suspend, found, err := unstructured.NestedBool(got.Object, "spec", "suspend")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue(), "%s keeps spec.suspend", obj.GetKind())
		g.Expect(suspend).To(BeFalse())
		interval, _, _ := unstructured.NestedString(got.Object, "spec", "interval")
		g.Expect(interval).To(Equal("10m"), "%s keeps spec.interval", obj.GetKind())

		// Suspending it is what the gating-controller will do: the schema takes it.
		g.Expect(unstructured.SetNestedField(got.Object, true, "spec", "suspend")).To(Succeed())
		g.Expect(env.Client.Update(ctx, got)).To(Succeed(), "%s", obj.GetKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		suspend, _, _ = unstructured.NestedBool(got.Object, "spec", "suspend")
		g.Expect(suspend).To(BeTrue(), "%s", obj.GetKind())
	}
}
