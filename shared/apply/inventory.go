package apply

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Entry is one inventory record as the Flux APIs write it: id
// `<namespace>_<name>_<group>_<kind>` (cli-utils' ObjMetadata string) and the API version.
type Entry struct {
	ID      string
	Version string
}

// Entries lists the objects of a change set, sorted by id.
func Entries(cs *ssa.ChangeSet) []Entry {
	out := make([]Entry, 0, len(cs.Entries))
	for _, e := range cs.Entries {
		gv := e.GroupVersion
		out = append(out, Entry{ID: e.ObjMetadata.String(), Version: gv[strings.LastIndex(gv, "/")+1:]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Merge is the union of two inventories (a failed apply keeps both, so nothing is orphaned).
func Merge(a, b []Entry) []Entry {
	seen := map[string]bool{}
	var out []Entry
	for _, inv := range [][]Entry{a, b} {
		for _, e := range inv {
			if !seen[e.ID] {
				seen[e.ID] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// Stale are the objects of old that are not in current, as stubs (kind, name, namespace) the
// resource manager can read and delete.
func Stale(old, current []Entry) ([]*unstructured.Unstructured, error) {
	keep := map[string]bool{}
	for _, e := range current {
		keep[e.ID] = true
	}
	var stale []*unstructured.Unstructured
	for _, e := range old {
		if keep[e.ID] {
			continue
		}
		m, err := object.ParseObjMetadata(e.ID)
		if err != nil {
			return nil, fmt.Errorf("inventory entry '%s': %w", e.ID, err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(m.GroupKind.WithVersion(e.Version))
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		stale = append(stale, u)
	}
	return stale, nil
}

// Revision is the digest of a set of objects: equal sets, equal revisions.
func Revision(objects []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, o := range objects {
		if err := enc.Encode(o.Object); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}
