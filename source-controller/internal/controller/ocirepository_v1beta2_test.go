package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The ResourceSet examples (resourceset-controller/docs/kubectl-resourceset.md) create source.toolkit.fluxcd.io/v1beta2 OCIRepositories (with
// a semver ref and a layerSelector): such an object applies as written, is reconciled, and its
// status reads back in v1beta2.
func TestOCIRepositoryInV1beta2(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	registry.PushArtifact(t, "charts/podinfo:6.6.3", map[string]string{"Chart.yaml": "name: podinfo\n"}, nil)
	d := registry.PushArtifact(t, "charts/podinfo:6.7.1", map[string]string{"Chart.yaml": "name: podinfo\n"}, nil)

	manifest := `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: podinfo-team1
  namespace: ` + ns + `
spec:
  interval: 10m
  url: oci://` + registry.Host() + `/charts/podinfo
  insecure: true
  ref:
    semver: "6.7.x"
  layerSelector:
    mediaType: "` + testserver.FluxContentMediaType + `"
    operation: copy
`
	obj := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(manifest), &obj.Object)).To(Succeed())
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())

	g.Eventually(func(g Gomega) string {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("source.toolkit.fluxcd.io/v1beta2")
		got.SetKind("OCIRepository")
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
		rev, _, _ := unstructured.NestedString(got.Object, "status", "artifact", "revision")
		return rev
	}, timeout).Should(Equal("6.7.1@" + d))
}
