package builder

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// spec.inputDefaults (flux-operator #225): an input that leaves a key out gets its default, one
// that sets it keeps its own value; inputs from providers get them too, and under Permute the
// defaults are keys of each combination.
func TestInputDefaults(t *testing.T) {
	g := NewWithT(t)
	render := func(manifest string, groups []inputs.Group) map[string]map[string]any {
		obj := &rsv1.ResourceSet{}
		g.Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed())
		objects, err := ForResourceSet(context.Background(), obj, groups)
		g.Expect(err).NotTo(HaveOccurred())
		out := map[string]map[string]any{}
		for _, o := range objects {
			out[o.GetName()] = o.Object["data"].(map[string]any)
		}
		return out
	}

	g.Expect(render(`
spec:
  inputDefaults:
    storage: 100Gi
    tier: standard
  inputs:
  - tenant: acme
    storage: 10Gi
  - tenant: utvt
  inputsFrom:
  - kind: ResourceSetInputProvider
    name: more
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.tenant >>
      namespace: s3
    data:
      storage: << inputs.storage >>
      tier: << inputs.tier >>
`, []inputs.Group{{Name: "more", Inputs: []map[string]any{{"id": "x", "tenant": "zeta", "tier": "gold"}}}})).To(Equal(map[string]map[string]any{
		"acme": {"storage": "10Gi", "tier": "standard"},
		"utvt": {"storage": "100Gi", "tier": "standard"},
		"zeta": {"storage": "100Gi", "tier": "gold"},
	}))

	g.Expect(render(`
spec:
  inputStrategy:
    name: Permute
  inputDefaults:
    env: production
  inputsFrom:
  - kind: ResourceSetInputProvider
    name: regions
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-<< inputs.regions.region >>
      namespace: apps
    data:
      env: << inputs.env >>
`, []inputs.Group{{Name: "regions", Inputs: []map[string]any{{"id": "1", "region": "eu"}}}})).To(Equal(map[string]map[string]any{
		"app-eu": {"env": "production"},
	}))
}
