package inputs_test

import (
	"testing"

	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// The ids Sluice's earlier Permute gave these combinations (computed by that code), given back
// to the combinations of today's.
func TestLegacyPermuteIDs(t *testing.T) {
	g := NewWithT(t)
	set := own("tenants", map[string]any{"tenant": "a"}, map[string]any{"tenant": "b", "id": "bee"})
	providers := []inputs.Group{
		provider("my-provider.v2", map[string]any{"id": "t1", "tag": "1.0.0"}, map[string]any{"tag": "2.0.0"}),
		provider("apps", map[string]any{"id": "podinfo"}),
	}
	row := func(m map[string]any) []any {
		tenant := m["tenants"].(map[string]any)["tenant"]
		return []any{tenant, m["my_provider_v2"].(map[string]any)["tag"], m["id"]}
	}

	got, err := inputs.Combine(rsv1.InputStrategyPermute, set, providers, false, 0)
	g.Expect(err).NotTo(HaveOccurred())
	inputs.LegacyPermuteIDs(got, set, providers)
	var rows [][]any
	for _, m := range got {
		rows = append(rows, row(m))
	}
	g.Expect(rows).To(ConsistOf(
		[]any{"a", "1.0.0", "76fca6c477b8"},
		[]any{"a", "2.0.0", "f25e6df7a266"},
		[]any{"b", "1.0.0", "6b51090f1372"},
		[]any{"b", "2.0.0", "3f6b528ec0ef"},
	))

	// Without inputs of the ResourceSet's own.
	got, err = inputs.Combine(rsv1.InputStrategyPermute, own("tenants"), providers, false, 0)
	g.Expect(err).NotTo(HaveOccurred())
	inputs.LegacyPermuteIDs(got, own("tenants"), providers)
	ids := map[any]any{}
	for _, m := range got {
		ids[m["my_provider_v2"].(map[string]any)["tag"]] = m["id"]
	}
	g.Expect(ids).To(Equal(map[any]any{"1.0.0": "776593b7be52", "2.0.0": "9c188b8daf90"}))
}
