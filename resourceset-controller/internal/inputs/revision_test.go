package inputs_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

func TestRevision(t *testing.T) {
	base := []map[string]any{{"id": "a", "tag": "1.0.0", "n": int64(1)}, {"id": "b", "nested": map[string]any{"x": "y", "a": "b"}}}
	for _, tc := range []struct {
		name  string
		other []map[string]any
		equal bool
	}{
		{"same content built in another key order",
			[]map[string]any{{"n": int64(1), "tag": "1.0.0", "id": "a"}, {"nested": map[string]any{"a": "b", "x": "y"}, "id": "b"}}, true},
		{"a float64 whole number equals the int64",
			[]map[string]any{{"id": "a", "tag": "1.0.0", "n": 1.0}, {"id": "b", "nested": map[string]any{"x": "y", "a": "b"}}}, true},
		{"a changed value",
			[]map[string]any{{"id": "a", "tag": "1.0.1", "n": int64(1)}, {"id": "b", "nested": map[string]any{"x": "y", "a": "b"}}}, false},
		{"another order of inputs",
			[]map[string]any{{"id": "b", "nested": map[string]any{"x": "y", "a": "b"}}, {"id": "a", "tag": "1.0.0", "n": int64(1)}}, false},
		{"one input less",
			[]map[string]any{{"id": "a", "tag": "1.0.0", "n": int64(1)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rev := inputs.Revision(base)
			g.Expect(rev).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			if tc.equal {
				g.Expect(inputs.Revision(tc.other)).To(Equal(rev))
			} else {
				g.Expect(inputs.Revision(tc.other)).NotTo(Equal(rev))
			}
		})
	}

	t.Run("nil and no inputs", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(inputs.Revision(nil)).To(Equal(inputs.Revision([]map[string]any{})))
		g.Expect(inputs.Revision(nil)).NotTo(Equal(inputs.Revision([]map[string]any{{}})))
	})
}
