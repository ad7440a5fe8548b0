package fluxapi_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// crd is what the test reads of a CustomResourceDefinition.
type crd struct {
	Metadata struct{ Name string }
	Spec     struct {
		Group string
		Names struct{ Kind, Plural string }
		// Versions are the served versions.
		Versions []struct {
			Name   string
			Served bool
		}
	}
}

// Every kind named here is served by its CRD (Sluice's in deploy/crds, Flux's generated into
// bin/crds by `make tools`) under that name, resource and version.
func TestKindsMatchTheirCRDs(t *testing.T) {
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, gvk := range []schema.GroupVersionKind{
		fluxapi.GitRepository, fluxapi.HelmRepository, fluxapi.HelmChart, fluxapi.OCIRepository, fluxapi.Bucket,
		fluxapi.ExternalArtifact, fluxapi.Kustomization, fluxapi.HelmRelease, fluxapi.ImageUpdateAutomation,
		fluxapi.ManifestGeneration, fluxapi.ManifestUpdate, fluxapi.ResourceSet, fluxapi.ResourceSetInputProvider,
	} {
		t.Run(gvk.Kind, func(t *testing.T) {
			g := NewWithT(t)
			file := gvk.Group + "_" + fluxapi.Resource(gvk).Resource + ".yaml"
			data, err := os.ReadFile(filepath.Join(root, "deploy", "crds", file))
			if os.IsNotExist(err) {
				data, err = os.ReadFile(filepath.Join(root, "bin", "crds", file))
			}
			g.Expect(err).NotTo(HaveOccurred(), "the CRD of %s", gvk.Kind)
			var c crd
			g.Expect(yaml.Unmarshal(data, &c)).To(Succeed())
			g.Expect(c.Metadata.Name).To(Equal(fluxapi.CRDName(gvk)))
			g.Expect(c.Spec.Group).To(Equal(gvk.Group))
			g.Expect(c.Spec.Names.Kind).To(Equal(gvk.Kind))
			g.Expect(c.Spec.Names.Plural).To(Equal(fluxapi.Resource(gvk).Resource))
			g.Expect(slices.ContainsFunc(c.Spec.Versions, func(v struct {
				Name   string
				Served bool
			}) bool {
				return v.Name == gvk.Version && v.Served
			})).To(BeTrue(), "%s is served", gvk.GroupVersion())
		})
	}
}
