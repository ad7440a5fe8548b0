package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMergeValues(t *testing.T) {
	g := NewWithT(t)
	dst := map[string]any{
		"a": map[string]any{"x": 1, "y": map[string]any{"deep": true}},
		"b": []any{1, 2},
		"c": map[string]any{"keep": 1},
		"d": "scalar",
	}
	src := map[string]any{
		"a": map[string]any{"y": map[string]any{"deeper": 2}, "z": 3},
		"b": []any{3},                     // lists replace
		"c": "now a scalar",               // a scalar replaces a map
		"d": map[string]any{"now": "map"}, // a map replaces a scalar
		"e": nil,                          // null is kept, for Helm to delete at render time
	}
	got := mergeValues(dst, src)
	g.Expect(got).To(Equal(map[string]any{
		"a": map[string]any{"x": 1, "y": map[string]any{"deep": true, "deeper": 2}, "z": 3},
		"b": []any{3},
		"c": "now a scalar",
		"d": map[string]any{"now": "map"},
		"e": nil,
	}))
	g.Expect(dst["a"]).To(Equal(map[string]any{"x": 1, "y": map[string]any{"deep": true}}), "dst is not modified")
}

func TestBudget(t *testing.T) {
	g := NewWithT(t)
	b := &budget{limits: Limits{MaxChartSize: 100, MaxFileSize: 60}.withDefaults(), remaining: 100}
	g.Expect(b.file("a", 60)).To(Succeed())
	g.Expect(b.file("b", 61)).To(MatchError(ErrTooLarge))
	err := b.file("c", 41)
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err).To(MatchError(ContainSubstring("once decompressed (at file 'c')")))
	g.Expect(b.file("d", 40)).To(Succeed())

	g.Expect(Limits{}.withDefaults()).To(Equal(Limits{MaxChartSize: 10 << 20, MaxFileSize: 5 << 20}))
	g.Expect(Limits{MaxChartSize: 1 << 30}.maxDecompressed()).To(Equal(int64(1 << 30)))
	g.Expect(Limits{MaxChartSize: 1}.maxDecompressed()).To(Equal(int64(100 << 20)))
}

func TestArchiveEntryName(t *testing.T) {
	for raw, want := range map[string]string{
		"podinfo/Chart.yaml":             "Chart.yaml",
		"./Chart.yaml":                   "Chart.yaml", // `tar -C dir .`: Helm accepts it, so do we
		`podinfo\templates\cm.yaml`:      "templates/cm.yaml",
		"podinfo/templates//x/./cm.yaml": "templates/x/cm.yaml",
	} {
		got, err := archiveEntryName(raw)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), raw)
		NewWithT(t).Expect(got).To(Equal(want), raw)
	}
	for _, raw := range []string{"../x", "a/../../x", `a\..\x`, "/a/b", "C:/a", "podinfo", "podinfo/", "Chart.yaml/x"} {
		_, err := archiveEntryName(raw)
		NewWithT(t).Expect(err).To(MatchError(ErrChartLoad), raw)
	}
}
