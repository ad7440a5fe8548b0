package forge

import (
	"maps"
	"slices"
)

// Item is one branch, tag, pull or merge request, or environment of a repository.
type Item struct {
	// ID identifies the item among its kind: the number of a pull or merge request, GitLab's id
	// of an environment, inputs.ID of the name of a branch or tag (flux-operator's ids).
	ID string
	// SHA is the commit the item points at (a request's head).
	SHA string
	// Branch is a branch's name, or the source branch of a request.
	Branch string
	// Tag is a tag's name.
	Tag string
	// Author and Title of a request.
	Author, Title string
	// Labels of a request.
	Labels []string
	// Extra are the keys of one forge's kind beyond these (GitLab's slug, an environment's
	// fields), exported as they are: JSON values only.
	Extra map[string]any
}

// Input is the item as a ResourceSet input, with flux-operator's keys: id, sha, branch, tag,
// author, title and labels, each only when set, and the Extra keys.
func (it Item) Input() map[string]any {
	m := make(map[string]any, 8+len(it.Extra))
	maps.Copy(m, it.Extra)
	m["id"] = it.ID
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("sha", it.SHA)
	set("branch", it.Branch)
	set("tag", it.Tag)
	set("author", it.Author)
	set("title", it.Title)
	if len(it.Labels) > 0 {
		labels := make([]any, len(it.Labels))
		for i, l := range it.Labels {
			labels[i] = l
		}
		m["labels"] = labels
	}
	return m
}

// Inputs are the inputs of items, in order.
func Inputs(items []Item) []map[string]any {
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i] = it.Input()
	}
	return out
}

// hasLabel reports whether the item carries label.
func (it Item) hasLabel(label string) bool { return slices.Contains(it.Labels, label) }
