package forge

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// Kind is what a provider type lists.
type Kind int

// The kinds of items.
const (
	Branches Kind = iota
	Tags
	Requests
	Environments
)

func (k Kind) String() string {
	switch k {
	case Branches:
		return "branches"
	case Tags:
		return "tags"
	case Requests:
		return "pull requests"
	case Environments:
		return "environments"
	}
	return "kind " + strconv.Itoa(int(k))
}

// Filter is a provider's spec.filter.
type Filter struct {
	IncludeBranch, ExcludeBranch           string
	IncludeTag, ExcludeTag, SemVer         string
	IncludeEnvironment, ExcludeEnvironment string
	// Labels a request must all have.
	Labels []string
	// Limit is the number of items kept, rsv1.DefaultInputLimit when not positive.
	Limit int
}

// FilterOf is the Filter of a provider's spec.
func FilterOf(obj *rsv1.ResourceSetInputProvider) Filter {
	f := Filter{Limit: obj.GetLimit()}
	if s := obj.Spec.Filter; s != nil {
		f.IncludeBranch, f.ExcludeBranch = s.IncludeBranch, s.ExcludeBranch
		f.IncludeTag, f.ExcludeTag, f.SemVer = s.IncludeTag, s.ExcludeTag, s.SemVer
		f.IncludeEnvironment, f.ExcludeEnvironment = s.IncludeEnvironment, s.ExcludeEnvironment
		f.Labels = s.Labels
	}
	return f
}

// Select keeps the items of kind that the filter lets through, in a stable order, at most
// Limit of them:
//   - branches, by includeBranch and excludeBranch, sorted by name;
//   - tags, as an OCIArtifactTag provider's: includeTag, excludeTag and semver, highest version
//     first (without semver, descending byte order);
//   - requests, by their source branch (includeBranch, excludeBranch) and labels (all of them),
//     newest (highest number) first;
//   - environments, by includeEnvironment and excludeEnvironment, sorted by name.
//
// An expression or range that does not parse is an *inputs.InvalidFilterError.
func Select(kind Kind, items []Item, f Filter) ([]Item, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = rsv1.DefaultInputLimit
	}
	if kind == Tags {
		return selectTags(items, f, limit)
	}
	var include, exclude *regexp.Regexp
	var err error
	name := func(it Item) string { return it.Branch }
	switch kind {
	case Environments:
		if include, err = compile("includeEnvironment", f.IncludeEnvironment); err != nil {
			return nil, err
		}
		if exclude, err = compile("excludeEnvironment", f.ExcludeEnvironment); err != nil {
			return nil, err
		}
		name = func(it Item) string { return it.envName() }
	default:
		if include, err = compile("includeBranch", f.IncludeBranch); err != nil {
			return nil, err
		}
		if exclude, err = compile("excludeBranch", f.ExcludeBranch); err != nil {
			return nil, err
		}
	}
	kept := make([]Item, 0, len(items))
	for _, it := range items {
		n := name(it)
		if include != nil && !include.MatchString(n) || exclude != nil && exclude.MatchString(n) {
			continue
		}
		if kind == Requests && !hasAll(it, f.Labels) {
			continue
		}
		kept = append(kept, it)
	}
	if kind == Requests {
		slices.SortStableFunc(kept, func(a, b Item) int { return compareNumbers(b.ID, a.ID) })
	} else {
		slices.SortStableFunc(kept, func(a, b Item) int { return strings.Compare(name(a), name(b)) })
	}
	if len(kept) > limit {
		kept = kept[:limit]
	}
	return kept, nil
}

// EnvironmentKey is the Extra key that holds an environment's name.
const EnvironmentKey = "title"

func (it Item) envName() string {
	s, _ := it.Extra[EnvironmentKey].(string)
	return s
}

func selectTags(items []Item, f Filter, limit int) ([]Item, error) {
	byName := make(map[string]Item, len(items))
	names := make([]string, 0, len(items))
	for _, it := range items {
		if _, dup := byName[it.Tag]; !dup {
			names = append(names, it.Tag)
		}
		byName[it.Tag] = it
	}
	names, err := inputs.SelectTags(names, inputs.Filter{
		SemVer: f.SemVer, IncludeTag: f.IncludeTag, ExcludeTag: f.ExcludeTag, Limit: limit,
	})
	if err != nil {
		return nil, err
	}
	out := make([]Item, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, nil
}

func compile(field, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, &inputs.InvalidFilterError{Field: field, Value: expr, Err: err}
	}
	return re, nil
}

func hasAll(it Item, labels []string) bool {
	for _, l := range labels {
		if !it.hasLabel(l) {
			return false
		}
	}
	return true
}

// compareNumbers orders decimal ids numerically, others after them by text.
func compareNumbers(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return 1
	case errB == nil:
		return -1
	}
	return strings.Compare(a, b)
}
