package controller

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// newInventory lists the applied objects as the seed writes them: id
// `<namespace>_<name>_<group>_<kind>` (cli-utils' ObjMetadata string) and the API version.
func newInventory(cs *ssa.ChangeSet) *rsv1.ResourceInventory {
	inv := &rsv1.ResourceInventory{Entries: make([]rsv1.ResourceRef, 0, len(cs.Entries))}
	for _, e := range cs.Entries {
		inv.Entries = append(inv.Entries, rsv1.ResourceRef{ID: e.ObjMetadata.String(), Version: versionOf(e.GroupVersion)})
	}
	sort.Slice(inv.Entries, func(i, j int) bool { return inv.Entries[i].ID < inv.Entries[j].ID })
	return inv
}

// versionOf is the version of "group/version" or "version".
func versionOf(gv string) string {
	for i := len(gv) - 1; i >= 0; i-- {
		if gv[i] == '/' {
			return gv[i+1:]
		}
	}
	return gv
}

// staleObjects are the objects of old that are not in current, as stubs (kind, name,
// namespace) the resource manager can read and delete.
func staleObjects(old, current *rsv1.ResourceInventory) ([]*unstructured.Unstructured, error) {
	if old == nil {
		return nil, nil
	}
	keep := map[string]bool{}
	if current != nil {
		for _, e := range current.Entries {
			keep[e.ID] = true
		}
	}
	var stale []*unstructured.Unstructured
	for _, e := range old.Entries {
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

// manifestsRevision is the digest of the built objects: equal builds, equal revisions. It is
// status.lastAppliedRevision, which tells a closed gate whether a build is new.
func manifestsRevision(objects []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, o := range objects {
		if err := enc.Encode(o.Object); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}
