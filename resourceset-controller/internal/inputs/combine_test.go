package inputs_test

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

func TestCombineFlatten(t *testing.T) {
	inline := []map[string]any{{"tenant": "a"}, {"tenant": "b"}}
	zeta := inputs.Group{Name: "zeta", Inputs: []map[string]any{{"id": "z1"}, {"id": "z2"}}}
	alpha := inputs.Group{Name: "alpha", Inputs: []map[string]any{{"id": "a1"}}}
	empty := inputs.Group{Name: "empty"}
	for _, tc := range []struct {
		name     string
		strategy string
		inline   []map[string]any
		groups   []inputs.Group
		want     []map[string]any
	}{
		{"inline then groups by name", rsv1.InputStrategyFlatten, inline, []inputs.Group{zeta, alpha},
			[]map[string]any{{"tenant": "a"}, {"tenant": "b"}, {"id": "a1"}, {"id": "z1"}, {"id": "z2"}}},
		{"the default strategy", "", inline, []inputs.Group{alpha, zeta},
			[]map[string]any{{"tenant": "a"}, {"tenant": "b"}, {"id": "a1"}, {"id": "z1"}, {"id": "z2"}}},
		{"an empty group adds nothing", rsv1.InputStrategyFlatten, nil, []inputs.Group{empty, alpha},
			[]map[string]any{{"id": "a1"}}},
		{"nothing", rsv1.InputStrategyFlatten, nil, nil, []map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := inputs.Combine(tc.strategy, tc.inline, tc.groups, inputs.DefaultLimit)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestCombinePermute(t *testing.T) {
	apps := inputs.Group{Name: "apps", Inputs: []map[string]any{
		{"id": "podinfo", "chart": "podinfo"},
		{"id": "redis", "chart": "redis"},
	}}
	tags := inputs.Group{Name: "my-provider.v2", Inputs: []map[string]any{
		{"id": "t1", "tag": "1.0.0"},
		{"id": "t2", "tag": "1.1.0"},
		{"tag": "2.0.0"}, // no id: its content identifies it
	}}

	t.Run("the product nests each provider under its normalised name", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.Combine(rsv1.InputStrategyPermute, nil, []inputs.Group{tags, apps}, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(6))

		// apps comes before my_provider_v2 (name order), the last dimension turning fastest.
		var pairs []string
		for _, m := range got {
			g.Expect(m).To(HaveLen(3))
			app := m["apps"].(map[string]any)
			tag := m["my_provider_v2"].(map[string]any)
			pairs = append(pairs, fmt.Sprintf("%s@%s", app["chart"], tag["tag"]))
		}
		g.Expect(pairs).To(Equal([]string{
			"podinfo@1.0.0", "podinfo@1.1.0", "podinfo@2.0.0",
			"redis@1.0.0", "redis@1.1.0", "redis@2.0.0",
		}))
		g.Expect(ids(got)).To(HaveLen(6), "ids are unique")
		for id := range ids(got) {
			g.Expect(id).To(MatchRegexp(`^[0-9a-f]{12}$`))
		}

		// Stable: the same inputs in another order give the same combinations and ids.
		again, err := inputs.Combine(rsv1.InputStrategyPermute, nil, []inputs.Group{apps, tags}, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(got))
	})

	t.Run("an id depends on the ids of its parts only", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.Combine(rsv1.InputStrategyPermute, nil, []inputs.Group{apps, tags}, 0)
		g.Expect(err).NotTo(HaveOccurred())

		// A new value in podinfo keeps every id; a new tag adds combinations and keeps the others.
		changed := inputs.Group{Name: "apps", Inputs: []map[string]any{
			{"id": "podinfo", "chart": "podinfo", "values": "new"},
			{"id": "redis", "chart": "redis"},
		}}
		more := inputs.Group{Name: "my-provider.v2", Inputs: append([]map[string]any{{"id": "t0"}}, tags.Inputs...)}
		next, err := inputs.Combine(rsv1.InputStrategyPermute, nil, []inputs.Group{changed, more}, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(next).To(HaveLen(8))
		for id := range ids(got) {
			g.Expect(ids(next)).To(HaveKey(id))
		}
	})

	t.Run("inline inputs are one more dimension merged at the top level", func(t *testing.T) {
		g := NewWithT(t)
		inline := []map[string]any{{"tenant": "team-a", "region": "eu"}, {"tenant": "team-b", "region": "us"}}
		got, err := inputs.Combine(rsv1.InputStrategyPermute, inline, []inputs.Group{apps}, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(4))
		var rows []string
		for _, m := range got {
			rows = append(rows, fmt.Sprintf("%s/%s/%s", m["tenant"], m["region"], m["apps"].(map[string]any)["chart"]))
		}
		g.Expect(rows).To(Equal([]string{"team-a/eu/podinfo", "team-a/eu/redis", "team-b/us/podinfo", "team-b/us/redis"}))
		g.Expect(ids(got)).To(HaveLen(4))
	})

	t.Run("an empty provider makes the product empty", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.Combine(rsv1.InputStrategyPermute, []map[string]any{{"tenant": "a"}},
			[]inputs.Group{apps, {Name: "nothing-yet"}}, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeEmpty())
		g.Expect(got).NotTo(BeNil())
	})

	t.Run("the product may reach the limit", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.Combine(rsv1.InputStrategyPermute, nil, []inputs.Group{apps, tags}, 6)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(6))
	})
}

func TestCombinePermuteErrors(t *testing.T) {
	one := []map[string]any{{"id": "x"}}
	for _, tc := range []struct {
		name    string
		inline  []map[string]any
		groups  []inputs.Group
		wantErr string
	}{
		{"two providers with the same normalised name", nil,
			[]inputs.Group{{Name: "my-app", Inputs: one}, {Name: "my.app", Inputs: one}},
			`the input providers "my-app" and "my.app" both appear as inputs.my_app`},
		{"a provider named id", nil,
			[]inputs.Group{{Name: "id", Inputs: one}},
			`the input provider "id" appears as inputs.id`},
		{"an inline key that hides a provider", []map[string]any{{"apps": "x"}},
			[]inputs.Group{{Name: "apps", Inputs: one}},
			`inline input 0 has the key "apps"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := inputs.Combine(rsv1.InputStrategyPermute, tc.inline, tc.groups, inputs.DefaultLimit)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}

	t.Run("an unknown strategy", func(t *testing.T) {
		g := NewWithT(t)
		_, err := inputs.Combine("Zip", nil, nil, 0)
		g.Expect(err).To(MatchError(`unknown input strategy "Zip": use Flatten or Permute`))
	})
}

func TestCombinePermuteLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inline int
		sizes  []int
		limit  int
		want   string
	}{
		{"the example of the issue", 0, []int{20, 600}, 10000,
			"the Permute input strategy gives 12,000 input combinations (20 × 600), more than the limit of 10,000: narrow the providers' filters"},
		{"inline inputs count as a dimension", 3, []int{100, 40}, 10000,
			"the Permute input strategy gives 12,000 input combinations (3 × 100 × 40), more than the limit of 10,000: narrow the providers' filters"},
		{"millions", 0, []int{200, 200, 200}, 10000,
			"the Permute input strategy gives 8,000,000 input combinations (200 × 200 × 200), more than the limit of 10,000: narrow the providers' filters"},
		{"beyond any machine integer", 0, []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100}, 10000,
			"the Permute input strategy gives 10,000,000,000,000,000,000,000 input combinations (100 × 100 × 100 × 100 × 100 × 100 × 100 × 100 × 100 × 100 × 100), more than the limit of 10,000: narrow the providers' filters"},
		{"a small limit", 0, []int{2, 3}, 5,
			"the Permute input strategy gives 6 input combinations (2 × 3), more than the limit of 5: narrow the providers' filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			inline := sized("in", tc.inline)
			var groups []inputs.Group
			for i, n := range tc.sizes {
				groups = append(groups, inputs.Group{Name: fmt.Sprintf("p%02d", i), Inputs: sized("x", n)})
			}
			_, err := inputs.Combine(rsv1.InputStrategyPermute, inline, groups, tc.limit)
			var tooMany *inputs.TooManyError
			g.Expect(errors.As(err, &tooMany)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(Equal(tc.want))
			g.Expect(tooMany.Limit).To(Equal(tc.limit))
		})
	}

	t.Run("the error comes before any combination is built", func(t *testing.T) {
		g := NewWithT(t)
		groups := []inputs.Group{
			{Name: "a", Inputs: sized("a", 200)}, {Name: "b", Inputs: sized("b", 200)}, {Name: "c", Inputs: sized("c", 200)},
		}
		// Building 8,000,000 maps would take millions of allocations; refusing takes a handful.
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := inputs.Combine(rsv1.InputStrategyPermute, nil, groups, inputs.DefaultLimit); err == nil {
				t.Fatal("expected an error")
			}
		})
		g.Expect(allocs).To(BeNumerically("<", 100))
	})
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"apps":           "apps",
		"my-provider.v2": "my_provider_v2",
		"My_Provider":    "my_provider",
		"ünïcode-1":      "_n_code_1",
		"":               "",
	} {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(inputs.NormalizeName(in)).To(Equal(want))
		})
	}
}

// sized is n inputs with distinct ids.
func sized(prefix string, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"id": fmt.Sprintf("%s-%d", prefix, i)}
	}
	return out
}

// ids is the set of the inputs' ids.
func ids(in []map[string]any) map[string]bool {
	set := map[string]bool{}
	for _, m := range in {
		set[m["id"].(string)] = true
	}
	return set
}
