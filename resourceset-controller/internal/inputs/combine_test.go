package inputs_test

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

const rsipVersion = "fluxcd.controlplane.io/v1"

// provider is a ResourceSetInputProvider's group of inputs in namespace apps.
func provider(name string, in ...map[string]any) inputs.Group {
	return inputs.Group{APIVersion: rsipVersion, Kind: "ResourceSetInputProvider", Namespace: "apps", Name: name, Inputs: in}
}

// own is the group of a ResourceSet's spec.inputs.
func own(name string, in ...map[string]any) inputs.Group {
	return inputs.Group{APIVersion: rsipVersion, Kind: "ResourceSet", Namespace: "apps", Name: name, Inputs: in}
}

// from is the provider key an input of the group carries.
func from(g inputs.Group) map[string]any {
	return map[string]any{"apiVersion": g.APIVersion, "kind": g.Kind, "name": g.Name, "namespace": g.Namespace}
}

// with is the input with extra keys.
func with(in map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestCombineFlatten(t *testing.T) {
	set := own("tenants", map[string]any{"tenant": "a"}, map[string]any{"tenant": "b"})
	zeta := provider("zeta", map[string]any{"id": "z1"}, map[string]any{"id": "z2"})
	alpha := provider("alpha", map[string]any{"id": "a1"})
	config := inputs.Group{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "zz", Inputs: []map[string]any{{"id": "c1"}}}
	empty := provider("empty")
	all := []map[string]any{
		with(set.Inputs[0], "provider", from(set)), with(set.Inputs[1], "provider", from(set)),
		// "/v1, Kind=ConfigMap" sorts before "fluxcd.controlplane.io/v1, Kind=...", as in flux-operator.
		with(config.Inputs[0], "provider", from(config)),
		with(alpha.Inputs[0], "provider", from(alpha)), with(zeta.Inputs[0], "provider", from(zeta)), with(zeta.Inputs[1], "provider", from(zeta)),
	}
	for _, tc := range []struct {
		name      string
		strategy  string
		own       inputs.Group
		providers []inputs.Group
		want      []map[string]any
	}{
		{"the ResourceSet's, then the providers' by kind and name", rsv1.InputStrategyFlatten, set, []inputs.Group{zeta, alpha, config}, all},
		{"the default strategy", "", set, []inputs.Group{config, alpha, zeta}, all},
		{"an empty group adds nothing", rsv1.InputStrategyFlatten, own("tenants"), []inputs.Group{empty, alpha},
			[]map[string]any{with(alpha.Inputs[0], "provider", from(alpha))}},
		{"nothing", rsv1.InputStrategyFlatten, own("tenants"), nil, []map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := inputs.Combine(tc.strategy, tc.own, tc.providers, false, inputs.DefaultLimit)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	NewWithT(t).Expect(zeta.Inputs[0]).To(Equal(map[string]any{"id": "z1"}), "the inputs given are not changed")
}

// flux-operator's ids: Adler-32, in decimal, as its golden files hold them.
func TestID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(inputs.ID("team1-apps")).To(Equal("340788154"))
	g.Expect(inputs.ID("color_environments=0/team1_apps=0")).To(Equal("3776973979"))
	g.Expect(inputs.ID("color_environments=1/team1_apps=0")).To(Equal("3777891484"))
}

func TestCombinePermute(t *testing.T) {
	apps := provider("apps", map[string]any{"id": "podinfo", "chart": "podinfo"}, map[string]any{"id": "redis", "chart": "redis"})
	tags := provider("my-provider.v2", map[string]any{"id": "t1", "tag": "1.0.0"}, map[string]any{"id": "t2", "tag": "1.1.0"},
		map[string]any{"tag": "2.0.0"})

	t.Run("the product nests each source under its normalised name", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.Combine(rsv1.InputStrategyPermute, own("set"), []inputs.Group{tags, apps}, false, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(6))

		// apps comes before my_provider_v2 (name order), the last dimension turning fastest; the
		// ResourceSet without inputs of its own is left out.
		var pairs []string
		for _, m := range got {
			g.Expect(m).To(HaveLen(3))
			app := m["apps"].(map[string]any)
			tag := m["my_provider_v2"].(map[string]any)
			g.Expect(app["provider"]).To(Equal(from(apps)))
			pairs = append(pairs, fmt.Sprintf("%s@%s", app["chart"], tag["tag"]))
		}
		g.Expect(pairs).To(Equal([]string{
			"podinfo@1.0.0", "podinfo@1.1.0", "podinfo@2.0.0",
			"redis@1.0.0", "redis@1.1.0", "redis@2.0.0",
		}))
		// The id of a combination is that of the indexes of its parts.
		g.Expect(got[0]["id"]).To(Equal(inputs.ID("apps=0/my_provider_v2=0")))
		g.Expect(got[5]["id"]).To(Equal(inputs.ID("apps=1/my_provider_v2=2")))
		g.Expect(ids(got)).To(HaveLen(6), "ids are unique")

		// The same inputs in another order give the same combinations and ids.
		again, err := inputs.Combine(rsv1.InputStrategyPermute, own("set"), []inputs.Group{apps, tags}, false, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(got))
	})

	t.Run("the ResourceSet's inputs are the first dimension, under its name", func(t *testing.T) {
		g := NewWithT(t)
		set := own("color-environments", map[string]any{"tenant": "team-a"}, map[string]any{"tenant": "team-b"})
		got, err := inputs.Combine(rsv1.InputStrategyPermute, set, []inputs.Group{apps}, false, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		var rows []string
		for _, m := range got {
			rows = append(rows, fmt.Sprintf("%s/%s", m["color_environments"].(map[string]any)["tenant"], m["apps"].(map[string]any)["chart"]))
		}
		g.Expect(rows).To(Equal([]string{"team-a/podinfo", "team-a/redis", "team-b/podinfo", "team-b/redis"}))
		g.Expect(got[1]["id"]).To(Equal(inputs.ID("color_environments=0/apps=1")))
	})

	t.Run("an empty provider is left out, or with includeEmptyProviders empties the product", func(t *testing.T) {
		g := NewWithT(t)
		set := own("set", map[string]any{"tenant": "a"})
		got, err := inputs.Combine(rsv1.InputStrategyPermute, set, []inputs.Group{apps, provider("nothing-yet")}, false, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(2))

		got, err = inputs.Combine(rsv1.InputStrategyPermute, set, []inputs.Group{apps, provider("nothing-yet")}, true, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeEmpty())
		g.Expect(got).NotTo(BeNil())

		// The ResourceSet is a source too: without inputs of its own, includeEmptyProviders
		// empties the product, as in flux-operator.
		got, err = inputs.Combine(rsv1.InputStrategyPermute, own("set"), []inputs.Group{apps}, true, inputs.DefaultLimit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeEmpty())
	})

	t.Run("the product may reach the limit", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.Combine(rsv1.InputStrategyPermute, own("set"), []inputs.Group{apps, tags}, false, 6)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(6))
	})
}

func TestCombinePermuteErrors(t *testing.T) {
	one := map[string]any{"id": "x"}
	for _, tc := range []struct {
		name      string
		own       inputs.Group
		providers []inputs.Group
		wantErr   string
	}{
		{"two providers with the same normalised name", own("set"),
			[]inputs.Group{provider("my-app", one), provider("my.app", one)},
			`the ResourceSetInputProvider "my-app" and the ResourceSetInputProvider "my.app" both appear as inputs.my_app`},
		{"a provider named as the ResourceSet", own("apps", one),
			[]inputs.Group{provider("apps", one)},
			`the ResourceSet "apps" and the ResourceSetInputProvider "apps" both appear as inputs.apps`},
		{"a provider named id", own("set"),
			[]inputs.Group{provider("id", one)},
			`the ResourceSetInputProvider "id" appears as inputs.id`},
		{"a name without letters or digits", own("set"),
			[]inputs.Group{provider("---", one)},
			`the ResourceSetInputProvider "---" has no letter or digit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := inputs.Combine(rsv1.InputStrategyPermute, tc.own, tc.providers, false, inputs.DefaultLimit)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}

	t.Run("an unknown strategy", func(t *testing.T) {
		g := NewWithT(t)
		_, err := inputs.Combine("Zip", own("set"), nil, false, 0)
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
		{"the ResourceSet's inputs count as a dimension", 3, []int{100, 40}, 10000,
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
			set := own("set", sized("in", tc.inline)...)
			var groups []inputs.Group
			for i, n := range tc.sizes {
				groups = append(groups, provider(fmt.Sprintf("p%02d", i), sized("x", n)...))
			}
			_, err := inputs.Combine(rsv1.InputStrategyPermute, set, groups, false, tc.limit)
			var tooMany *inputs.TooManyError
			g.Expect(errors.As(err, &tooMany)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(Equal(tc.want))
			g.Expect(tooMany.Limit).To(Equal(tc.limit))
		})
	}

	t.Run("the error comes before any combination is built", func(t *testing.T) {
		g := NewWithT(t)
		groups := []inputs.Group{provider("a", sized("a", 200)...), provider("b", sized("b", 200)...), provider("c", sized("c", 200)...)}
		// Building 8,000,000 maps would take millions of allocations; refusing takes a handful.
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := inputs.Combine(rsv1.InputStrategyPermute, own("set"), groups, false, inputs.DefaultLimit); err == nil {
				t.Fatal("expected an error")
			}
		})
		g.Expect(allocs).To(BeNumerically("<", 100))
	})
}

func TestNormalizeKeyForTemplate(t *testing.T) {
	for in, want := range map[string]string{
		"apps":               "apps",
		"my-provider.v2":     "my_provider_v2",
		"My_Provider":        "my_provider",
		"color-environments": "color_environments",
		"--a..b--":           "a_b",
		"ünïcode-1":          "ncode_1",
		"a b\tc":             "a_b_c",
		"":                   "",
	} {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(inputs.NormalizeKeyForTemplate(in)).To(Equal(want))
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
