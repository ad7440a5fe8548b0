package inputs

import (
	"cmp"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Group is the inputs of one source: the ResourceSet itself (its spec.inputs) or one provider.
type Group struct {
	APIVersion, Kind, Namespace, Name string
	Inputs                            []map[string]any
}

// ProviderKey is the key under which every input carries its source, as flux-operator's do:
// `<< inputs.provider.name >>`, with apiVersion, kind, name and namespace.
const ProviderKey = "provider"

// DefaultLimit is the cap on the number of Permute combinations the controller passes.
const DefaultLimit = 10000

// Combine joins the ResourceSet's own inputs (own: its spec.inputs, as a Group of kind
// ResourceSet) with its providers' by the strategy (rsv1.InputStrategyFlatten when empty, or
// rsv1.InputStrategyPermute), as flux-operator does:
//   - the sources are the ResourceSet first, then the providers in the order of their
//     apiVersion and kind, namespace and name, whatever the order they were listed in;
//   - every input gets ProviderKey, its source;
//   - Flatten is every source's inputs, one after the other;
//   - Permute is the Cartesian product of the sources: each combination holds one input of
//     every source under the source's NormalizeKeyForTemplate name (the ResourceSet's spec.inputs
//     under the ResourceSet's name: `<< inputs.my_set.tenant >>`), the last source turning
//     fastest, and an id that is ID of "<name>=<index>" of its parts joined by "/". A source
//     without inputs is left out, unless includeEmpty is set: then it makes the product empty.
//
// When the product would hold more than limit combinations (limit > 0), Combine returns a
// *TooManyError before building any of them. Combine does not modify the inputs it is given.
func Combine(strategy string, own Group, providers []Group, includeEmpty bool, limit int) ([]map[string]any, error) {
	sources := make([]Group, 0, len(providers)+1)
	sources = append(sources, own)
	sorted := slices.Clone(providers)
	slices.SortStableFunc(sorted, func(a, b Group) int {
		return cmp.Or(strings.Compare(a.gvk(), b.gvk()), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	sources = append(sources, sorted...)
	switch strategy {
	case "", rsv1.InputStrategyFlatten:
		return flatten(sources), nil
	case rsv1.InputStrategyPermute:
		return permute(sources, includeEmpty, limit)
	default:
		return nil, fmt.Errorf("unknown input strategy %q: use %s or %s",
			strategy, rsv1.InputStrategyFlatten, rsv1.InputStrategyPermute)
	}
}

// gvk orders sources as flux-operator does: by the string of their GroupVersionKind.
func (g Group) gvk() string {
	return schema.FromAPIVersionAndKind(g.APIVersion, g.Kind).String()
}

// withProvider is a copy of the group's inputs, each with ProviderKey set to the group.
func (g Group) withProvider() []map[string]any {
	out := make([]map[string]any, len(g.Inputs))
	for i, in := range g.Inputs {
		c := make(map[string]any, len(in)+1)
		maps.Copy(c, in)
		c[ProviderKey] = map[string]any{"apiVersion": g.APIVersion, "kind": g.Kind, "name": g.Name, "namespace": g.Namespace}
		out[i] = c
	}
	return out
}

func flatten(sources []Group) []map[string]any {
	n := 0
	for _, s := range sources {
		n += len(s.Inputs)
	}
	out := make([]map[string]any, 0, n)
	for _, s := range sources {
		out = append(out, s.withProvider()...)
	}
	return out
}

// dimension is one factor of the product: a source, and the key its inputs are nested under.
type dimension struct {
	key    string
	source Group
	inputs []map[string]any // the source's, with ProviderKey, once the product is known to fit
}

func permute(sources []Group, includeEmpty bool, limit int) ([]map[string]any, error) {
	dims := make([]dimension, 0, len(sources))
	owner := map[string]string{}
	for _, s := range sources {
		if len(s.Inputs) == 0 && !includeEmpty {
			continue
		}
		key := NormalizeKeyForTemplate(s.Name)
		switch other, taken := owner[key]; {
		case key == "":
			return nil, fmt.Errorf("the %s %q has no letter or digit to appear as under the Permute strategy: rename it", s.Kind, s.Name)
		case key == IDKey:
			return nil, fmt.Errorf("the %s %q appears as inputs.%s, which is the id of each combination under the Permute strategy: rename it", s.Kind, s.Name, key)
		case taken:
			return nil, fmt.Errorf("%s and the %s %q both appear as inputs.%s under the Permute strategy: rename one of them", other, s.Kind, s.Name, key)
		}
		owner[key] = fmt.Sprintf("the %s %q", s.Kind, s.Name)
		dims = append(dims, dimension{key: key, source: s})
	}
	if len(dims) == 0 {
		return []map[string]any{}, nil
	}

	// Count with big integers: 64 providers of 100 inputs overflow any machine integer.
	total := big.NewInt(1)
	for _, d := range dims {
		total.Mul(total, big.NewInt(int64(len(d.source.Inputs))))
	}
	if limit > 0 && total.Cmp(big.NewInt(int64(limit))) > 0 {
		sizes := make([]int, len(dims))
		for i, d := range dims {
			sizes[i] = len(d.source.Inputs)
		}
		return nil, &TooManyError{Count: total, Sizes: sizes, Limit: limit}
	}
	if total.Sign() == 0 {
		return []map[string]any{}, nil
	}
	for i := range dims {
		dims[i].inputs = dims[i].source.withProvider()
	}

	n := int(total.Int64())
	out := make([]map[string]any, 0, n)
	idx := make([]int, len(dims)) // odometer over the dimensions, the last one turning fastest
	for range n {
		out = append(out, combination(dims, idx))
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < len(dims[d].inputs) {
				break
			}
			idx[d] = 0
		}
	}
	return out, nil
}

// combination builds the input made of dims[d].inputs[idx[d]] for every d.
func combination(dims []dimension, idx []int) map[string]any {
	m := make(map[string]any, len(dims)+1)
	var seed strings.Builder
	for d, dim := range dims {
		m[dim.key] = dim.inputs[idx[d]]
		if d > 0 {
			seed.WriteByte('/')
		}
		seed.WriteString(dim.key)
		seed.WriteByte('=')
		seed.WriteString(strconv.Itoa(idx[d]))
	}
	m[IDKey] = ID(seed.String())
	return m
}

// NormalizeKeyForTemplate is the key a source's inputs are nested under by the Permute strategy,
// flux-operator's: the name in lower case, spaces and punctuation turned into _, other
// characters but a-z and 0-9 dropped, and runs of _ folded, without one at either end, so that
// `<< inputs.my_provider.tag >>` is a valid template field path for the provider my-provider.
func NormalizeKeyForTemplate(name string) string {
	mapped := strings.Map(func(r rune) rune {
		r = unicode.ToLower(r)
		switch {
		case unicode.IsSpace(r) || unicode.IsPunct(r):
			return '_'
		case ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			return r
		}
		return -1
	}, name)
	return strings.Join(strings.FieldsFunc(mapped, func(r rune) bool { return r == '_' }), "_")
}
