package inputs_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

func TestStatic(t *testing.T) {
	g := NewWithT(t)
	values := map[string]any{"env": "prod", "replicas": int64(3)}

	got := inputs.Static(values)
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0]).To(HaveKeyWithValue("env", "prod"))
	g.Expect(got[0]).To(HaveKeyWithValue("replicas", int64(3)))
	g.Expect(got[0]["id"]).To(MatchRegexp(`^[0-9a-f]{12}$`))
	g.Expect(values).NotTo(HaveKey("id"), "the spec's values are not changed")

	// Same values, same id; other values, another id.
	g.Expect(inputs.Static(map[string]any{"replicas": int64(3), "env": "prod"})[0]["id"]).To(Equal(got[0]["id"]))
	g.Expect(inputs.Static(map[string]any{"env": "dev", "replicas": int64(3)})[0]["id"]).NotTo(Equal(got[0]["id"]))

	// An id of their own is kept.
	g.Expect(inputs.Static(map[string]any{"id": "main", "env": "prod"})).To(Equal([]map[string]any{{"id": "main", "env": "prod"}}))

	// No values is still one input.
	empty := inputs.Static(nil)
	g.Expect(empty).To(HaveLen(1))
	g.Expect(empty[0]).To(HaveKey("id"))
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
