package inputs_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

func TestStatic(t *testing.T) {
	g := NewWithT(t)
	values := map[string]any{"env": "prod", "replicas": int64(3), "id": "mine"}

	// The id given replaces one of the values, as flux-operator's Static provider does.
	got := inputs.Static(values, inputs.ID("uid-1"))
	g.Expect(got).To(Equal([]map[string]any{{"env": "prod", "replicas": int64(3), "id": inputs.ID("uid-1")}}))
	g.Expect(values).To(HaveKeyWithValue("id", "mine"), "the spec's values are not changed")

	// No values is still one input.
	g.Expect(inputs.Static(nil, "1")).To(Equal([]map[string]any{{"id": "1"}}))
}

// The ids Sluice gave before flux-operator's: a provider keeps the id of an input its previous
// export holds, and gives the new ids to inputs that are new.
func TestKeepLegacyIDs(t *testing.T) {
	g := NewWithT(t)
	g.Expect(inputs.LegacyID("main")).To(MatchRegexp(`^[0-9a-f]{12}$`))
	g.Expect(inputs.LegacyStaticID(map[string]any{"env": "prod", "n": int64(1)})).To(Equal(inputs.LegacyStaticID(map[string]any{"n": int64(1), "env": "prod"})))
	g.Expect(inputs.LegacyStaticID(map[string]any{"env": "prod"})).NotTo(Equal(inputs.LegacyStaticID(map[string]any{"env": "dev"})))
	g.Expect(inputs.LegacyStaticID(map[string]any{"id": "main", "env": "prod"})).To(Equal("main"))

	previous := []map[string]any{{"id": inputs.LegacyID("main"), "branch": "main"}, {"id": inputs.ID("dev"), "branch": "dev"}}
	list := []map[string]any{
		{"id": inputs.ID("main"), "branch": "main"},
		{"id": inputs.ID("dev"), "branch": "dev"},
		{"id": inputs.ID("feature"), "branch": "feature"},
	}
	byBranch := func(in map[string]any) string { return inputs.LegacyID(in["branch"].(string)) }
	g.Expect(inputs.KeepLegacyIDs(list, previous, byBranch)).To(Equal(1))
	g.Expect(list).To(Equal([]map[string]any{
		{"id": inputs.LegacyID("main"), "branch": "main"}, // exported before: keeps its id
		{"id": inputs.ID("dev"), "branch": "dev"},         // exported with the new id already
		{"id": inputs.ID("feature"), "branch": "feature"}, // new
	}))
	g.Expect(inputs.KeepLegacyIDs(list, nil, byBranch)).To(Equal(0), "a first export has nothing to keep")
}

func TestWithDefaults(t *testing.T) {
	g := NewWithT(t)
	defaults := map[string]any{"chart": "podinfo", "tag": "none"}
	in := []map[string]any{{"id": "a", "tag": "1.0.0"}, {"id": "b"}}

	got := inputs.WithDefaults(in, defaults)
	g.Expect(got).To(Equal([]map[string]any{
		{"id": "a", "tag": "1.0.0", "chart": "podinfo"},
		{"id": "b", "tag": "none", "chart": "podinfo"},
	}))
	g.Expect(in[1]).To(Equal(map[string]any{"id": "b"}), "the inputs are copied, not changed")
	g.Expect(inputs.WithDefaults(in, nil)).To(Equal(in))
}
