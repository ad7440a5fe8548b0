package inputs

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Group is the exported inputs of one provider; Name is the provider's name.
type Group struct {
	Name   string
	Inputs []map[string]any
}

// WithoutEmpty returns the groups that hold inputs: under Permute a provider without inputs is
// left out of the product unless includeEmptyProviders is set (flux-operator's default).
func WithoutEmpty(groups []Group) []Group {
	return slices.DeleteFunc(slices.Clone(groups), func(g Group) bool { return len(g.Inputs) == 0 })
}

// DefaultLimit is the cap on the number of Permute combinations the controller passes.
const DefaultLimit = 10000

// Combine joins a ResourceSet's inline inputs with its providers' inputs by the strategy
// (rsv1.InputStrategyFlatten when empty, or rsv1.InputStrategyPermute). Groups are taken in
// Name order so the result does not depend on the order the providers were listed in.
//
// Flatten is the inline inputs followed by every group's inputs, unchanged.
//
// Permute is the Cartesian product of the groups: each combination holds one input of every
// group under the group's NormalizeName (`<< inputs.my_provider.tag >>`). Inline inputs, when
// there are some, are one more dimension (the first) whose keys are merged at the top level
// (`<< inputs.tenant >>`). Each combination's id is a short hash of the ids of its parts, stable
// across reconciles; it replaces an id of an inline input, which still counts in the hash. A
// group without inputs makes the product empty. When the product would
// hold more than limit combinations (limit > 0), Combine returns a *TooManyError before
// building any of them; limit applies to Permute only, as Flatten never holds more than the
// inputs it was given.
func Combine(strategy string, inline []map[string]any, groups []Group, limit int) ([]map[string]any, error) {
	sorted := slices.Clone(groups)
	slices.SortStableFunc(sorted, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	switch strategy {
	case "", rsv1.InputStrategyFlatten:
		return flatten(inline, sorted), nil
	case rsv1.InputStrategyPermute:
		return permute(inline, sorted, limit)
	default:
		return nil, fmt.Errorf("unknown input strategy %q: use %s or %s",
			strategy, rsv1.InputStrategyFlatten, rsv1.InputStrategyPermute)
	}
}

func flatten(inline []map[string]any, groups []Group) []map[string]any {
	n := len(inline)
	for _, g := range groups {
		n += len(g.Inputs)
	}
	out := make([]map[string]any, 0, n)
	out = append(out, inline...)
	for _, g := range groups {
		out = append(out, g.Inputs...)
	}
	return out
}

// dimension is one factor of the product: its inputs and the key they are nested under (empty
// for the inline inputs, which are merged at the top level).
type dimension struct {
	key    string
	inputs []map[string]any
}

func permute(inline []map[string]any, groups []Group, limit int) ([]map[string]any, error) {
	dims := make([]dimension, 0, len(groups)+1)
	if len(inline) > 0 {
		dims = append(dims, dimension{inputs: inline})
	}
	owner := map[string]string{}
	for _, g := range groups {
		key := NormalizeName(g.Name)
		if key == IDKey {
			return nil, fmt.Errorf("the input provider %q appears as inputs.%s, which is the id of each combination under the Permute strategy: rename the provider", g.Name, key)
		}
		if other, ok := owner[key]; ok {
			return nil, fmt.Errorf("the input providers %q and %q both appear as inputs.%s: rename one of them", other, g.Name, key)
		}
		owner[key] = g.Name
		dims = append(dims, dimension{key: key, inputs: g.Inputs})
	}
	// A key of an inline input must not hide a provider's inputs.
	for i, in := range inline {
		for k := range in {
			if name, ok := owner[k]; ok {
				return nil, fmt.Errorf("inline input %d has the key %q, which is where the inputs of provider %q go under the Permute strategy: rename the key", i, k, name)
			}
		}
	}
	if len(dims) == 0 {
		return []map[string]any{}, nil
	}

	// Count with big integers: 64 providers of 100 inputs overflow any machine integer.
	total := big.NewInt(1)
	for _, d := range dims {
		total.Mul(total, big.NewInt(int64(len(d.inputs))))
	}
	if limit > 0 && total.Cmp(big.NewInt(int64(limit))) > 0 {
		sizes := make([]int, len(dims))
		for i, d := range dims {
			sizes[i] = len(d.inputs)
		}
		return nil, &TooManyError{Count: total, Sizes: sizes, Limit: limit}
	}
	if total.Sign() == 0 {
		return []map[string]any{}, nil
	}

	// The part keys are computed once per input rather than once per combination.
	keys := make([][][]byte, len(dims))
	for i, d := range dims {
		keys[i] = make([][]byte, len(d.inputs))
		for j, in := range d.inputs {
			keys[i][j] = partKey(in)
		}
	}

	n := int(total.Int64())
	out := make([]map[string]any, 0, n)
	idx := make([]int, len(dims)) // odometer over the dimensions, the last one turning fastest
	for range n {
		out = append(out, combination(dims, keys, idx))
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
func combination(dims []dimension, keys [][][]byte, idx []int) map[string]any {
	m := make(map[string]any, len(dims)+1)
	var seed []byte
	for d, dim := range dims {
		in := dim.inputs[idx[d]]
		if dim.key == "" {
			for k, v := range in {
				m[k] = v
			}
		} else {
			m[dim.key] = in
		}
		// The dimension's key, then the part's; NUL cannot occur in either (keys are normalised,
		// part keys are JSON), so different combinations never hash the same bytes.
		seed = append(seed, dim.key...)
		seed = append(seed, 0)
		seed = append(seed, keys[d][idx[d]]...)
		seed = append(seed, 0)
	}
	m[IDKey] = shortHash(seed)
	return m
}

// NormalizeName is the key a provider's inputs are nested under by the Permute strategy: the
// name in lower case with every character other than a-z, 0-9 and _ replaced by _, so that
// `<< inputs.my_provider.tag >>` is a valid template field path for the provider my-provider.
func NormalizeName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
