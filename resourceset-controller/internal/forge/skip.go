package forge

import (
	"maps"
	"strings"
)

// Freeze applies spec.skip.labels to requests: a request that carries one of the labels (or, for
// a label written "!name", lacks it) keeps the input it was last exported with, so its sha stays
// where it was while the label is on; a request so labelled that was not exported before is
// left out. last are the provider's exported inputs, matched by id.
func Freeze(items []Item, skipLabels []string, last []map[string]any) []Item {
	if len(skipLabels) == 0 {
		return items
	}
	byID := make(map[string]map[string]any, len(last))
	for _, in := range last {
		if id, ok := in["id"].(string); ok {
			byID[id] = in
		}
	}
	out := make([]Item, 0, len(items))
	for _, it := range items {
		if !skipped(it, skipLabels) {
			out = append(out, it)
			continue
		}
		prev, ok := byID[it.ID]
		if !ok {
			continue
		}
		out = append(out, frozen(it, prev))
	}
	return out
}

func skipped(it Item, skipLabels []string) bool {
	for _, l := range skipLabels {
		if name, negated := strings.CutPrefix(l, "!"); negated {
			if !it.hasLabel(name) {
				return true
			}
		} else if it.hasLabel(l) {
			return true
		}
	}
	return false
}

// frozen is it with the request's fields as they were exported: the head sha, branch, title,
// author and labels. The default values are merged again by the caller, so a change of
// spec.defaultValues still reaches a frozen request.
func frozen(it Item, prev map[string]any) Item {
	str := func(k string) string {
		s, _ := prev[k].(string)
		return s
	}
	it.SHA, it.Branch, it.Title, it.Author = str("sha"), str("branch"), str("title"), str("author")
	it.Labels = nil
	if ls, ok := prev["labels"].([]any); ok {
		for _, l := range ls {
			if s, ok := l.(string); ok {
				it.Labels = append(it.Labels, s)
			}
		}
	}
	it.Extra = maps.Clone(it.Extra)
	for k := range it.Extra {
		if v, ok := prev[k]; ok {
			it.Extra[k] = v
		}
	}
	return it
}
