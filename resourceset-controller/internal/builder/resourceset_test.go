package builder

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// Under Permute, a provider that exports nothing is left out of the product (flux-operator's
// default), unless includeEmptyProviders asks for the mathematical product, which is then empty.
// The ResourceSet's own inputs are a dimension under its name.
func TestPermuteWithAnEmptyProvider(t *testing.T) {
	rset := func(includeEmpty bool) *rsv1.ResourceSet {
		obj := &rsv1.ResourceSet{}
		NewWithT(t).Expect(yaml.UnmarshalStrict([]byte(`
metadata:
  name: tenants
spec:
  inputStrategy:
    name: Permute
  inputs:
    - tenant: team-a
    - tenant: team-b
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: regions
    - kind: ResourceSetInputProvider
      name: previews
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.tenants.tenant >>-<< inputs.regions.region >>
      namespace: apps
`), obj)).To(Succeed())
		obj.Spec.InputStrategy.IncludeEmptyProviders = includeEmpty
		return obj
	}
	groups := []inputs.Group{
		{Name: "regions", Inputs: []map[string]any{{"id": "1", "region": "eu"}}},
		{Name: "previews"}, // no pull request open
	}

	g := NewWithT(t)
	objects, err := ForResourceSet(context.Background(), rset(false), groups)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, o := range objects {
		names = append(names, o.GetName())
	}
	g.Expect(names).To(ConsistOf("team-a-eu", "team-b-eu"))

	objects, err = ForResourceSet(context.Background(), rset(true), groups)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).To(BeEmpty())
}

// A template written for Sluice's earlier Permute, which merged the ResourceSet's own inputs at
// the top level, fails with where they are now.
func TestPermuteOwnInputsHint(t *testing.T) {
	g := NewWithT(t)
	obj := &rsv1.ResourceSet{}
	g.Expect(yaml.UnmarshalStrict([]byte(`
metadata:
  name: color-environments
spec:
  inputStrategy:
    name: Permute
  inputs:
    - tenant: team-a
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.tenant >>
      namespace: apps
`), obj)).To(Succeed())
	_, err := ForResourceSet(context.Background(), obj, nil)
	g.Expect(err).To(MatchError(ContainSubstring(`map has no entry for key "tenant": under the Permute strategy the ResourceSet's own inputs are under its name: << inputs.color_environments.tenant >>`)))

	obj.Spec.ResourcesTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.color_environments.tenant >>\n  namespace: apps\n"
	objects, err := ForResourceSet(context.Background(), obj, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).To(HaveLen(1))
	g.Expect(objects[0].GetName()).To(Equal("team-a"))
}
