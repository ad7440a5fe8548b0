package update

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// wanted is what a changed workload must look like after the change.
type wanted struct {
	ref    workload.Ref
	object *unstructured.Unstructured
}

// verify compares the manifests before and after the change: each changed workload must now be
// what is wanted of it, and every other object must be as it was.
func verify(before, after []*unstructured.Unstructured, wants []wanted, namespace string) error {
	index := func(objs []*unstructured.Unstructured) map[patch.ID]*unstructured.Unstructured {
		m := make(map[patch.ID]*unstructured.Unstructured, len(objs))
		for _, o := range objs {
			m[patch.IDOf(o)] = o
		}
		return m
	}
	b, a := index(before), index(after)
	var problems []string
	for id, o := range b {
		n, ok := a[id]
		w := wantOf(wants, o, namespace)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s was removed", describe(o)))
		case w != nil:
			ref, want := w.ref, w.object
			if !reflect.DeepEqual(n.Object, want.Object) {
				if reflect.DeepEqual(n.Object, o.Object) && !reflect.DeepEqual(o.Object, want.Object) {
					problems = append(problems, fmt.Sprintf("the requested change of %s is missing", ref))
				} else {
					problems = append(problems, fmt.Sprintf("%s changed in other ways than requested (%s)", ref,
						strings.Join(diffPaths("", want.Object, n.Object), "; ")))
				}
			}
		case !reflect.DeepEqual(n.Object, o.Object):
			problems = append(problems, fmt.Sprintf("%s changed (%s)", describe(o), strings.Join(diffPaths("", o.Object, n.Object), "; ")))
		}
	}
	for id, o := range a {
		if _, ok := b[id]; !ok {
			problems = append(problems, fmt.Sprintf("%s was added", describe(o)))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return verificationFailed("verification of the change failed, nothing was pushed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// wantOf is the entry of wants for o, nil when o is not changed.
func wantOf(wants []wanted, o *unstructured.Unstructured, namespace string) *wanted {
	for i := range wants {
		if wants[i].ref.Matches(o, namespace) {
			return &wants[i]
		}
	}
	return nil
}

// maxDiffPaths bounds the fields a verification failure names.
const maxDiffPaths = 5

// diffPaths names the fields in which got differs from want ("spec.template.spec.containers[1].image
// is busybox:1.36, expected ..." is too much for a condition: only the paths are given), at most
// maxDiffPaths of them. Values are never shown: they may come from anywhere in the repository.
func diffPaths(prefix string, want, got any) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{orRoot(prefix)}
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, diffPaths(p, w[k], g[k])...)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{orRoot(prefix)}
		}
		for i := range w {
			out = append(out, diffPaths(fmt.Sprintf("%s[%d]", prefix, i), w[i], g[i])...)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{orRoot(prefix)}
		}
	}
	if len(out) > maxDiffPaths {
		out = append(out[:maxDiffPaths], "…")
	}
	return out
}

func orRoot(p string) string {
	if p == "" {
		return "the whole object"
	}
	return p
}
