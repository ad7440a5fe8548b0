package apply

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// appliedSet is what the controller remembers of its last successful apply for an owner:
// the objects as applied (encoded: a few hundred bytes each, where the decoded maps take ten
// times that for as long as they are held), and for each its content digest and the
// resourceVersion the API server gave it. An object whose desired content and live resourceVersion are both unchanged
// needs no dry-run: nothing, and nobody, changed it. This turns a no-op reconcile of N objects
// from N dry-run requests into one metadata LIST per kind and namespace. The state lives in
// memory: after a restart the first reconcile dry-runs everything, as Flux does every time.
type appliedSet struct {
	revision string
	objects  [][]byte                  // JSON
	versions map[string]appliedVersion // by inventory id
}

type appliedVersion struct {
	digest          [sha256.Size]byte
	resourceVersion string
}

// Memory holds the appliedSet of every owner (ResourceSet, ManifestGeneration), by
// namespace/name. The zero value is ready to use.
type Memory struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*appliedSet
}

func (c *Memory) get(key types.NamespacedName) *appliedSet {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKey[key]
}

func (c *Memory) set(key types.NamespacedName, s *appliedSet) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[types.NamespacedName]*appliedSet{}
	}
	c.byKey[key] = s
}

// Forget drops what is remembered of an owner, its steps' applies included.
func (c *Memory) Forget(key types.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byKey, key)
	for k := range c.byKey {
		if k.Namespace == key.Namespace && strings.HasPrefix(k.Name, key.Name+"/") {
			delete(c.byKey, k)
		}
	}
}

// objectID is the inventory id of an object.
func objectID(o *unstructured.Unstructured) string {
	return object.UnstructuredToObjMetadata(o).String()
}

// encoded is the objects of an apply in JSON, and their content digests by inventory id,
// computed once per apply: an object that cannot be encoded has neither and is always applied.
type encoded struct {
	objects [][]byte
	digests map[string][sha256.Size]byte
}

func encode(objects []*unstructured.Unstructured) encoded {
	e := encoded{objects: make([][]byte, 0, len(objects)), digests: make(map[string][sha256.Size]byte, len(objects))}
	for _, o := range objects {
		if b, err := json.Marshal(o.Object); err == nil {
			e.objects = append(e.objects, b)
			e.digests[objectID(o)] = sha256.Sum256(b)
		}
	}
	return e
}

// unchangedSince splits objects into those known unchanged since the last apply (returned as
// change set entries, action unchanged) and those to apply. Without a state, or when the live
// versions cannot be listed (e.g. the account may not list), everything is applied.
func unchangedSince(state *appliedSet, live map[string]string, objects []*unstructured.Unstructured,
	digest map[string][sha256.Size]byte) ([]ssa.ChangeSetEntry, []*unstructured.Unstructured) {
	if state == nil || live == nil {
		return nil, objects
	}
	var unchanged []ssa.ChangeSetEntry
	var apply []*unstructured.Unstructured
	for _, o := range objects {
		id := objectID(o)
		v, known := state.versions[id]
		d, hasDigest := digest[id]
		if !known || !hasDigest || d != v.digest || v.resourceVersion == "" || live[id] != v.resourceVersion {
			apply = append(apply, o)
			continue
		}
		unchanged = append(unchanged, ssa.ChangeSetEntry{
			ObjMetadata:  object.UnstructuredToObjMetadata(o),
			GroupVersion: o.GroupVersionKind().GroupVersion().String(),
			Subject:      utils.FmtUnstructured(o),
			Action:       ssa.UnchangedAction,
		})
	}
	return unchanged, apply
}

// liveVersions lists, with one metadata-only LIST per kind and namespace (paginated), the
// resourceVersions of the objects labelled as the ResourceSet's, by inventory id.
func liveVersions(ctx context.Context, c client.Client, objects []*unstructured.Unstructured, owner map[string]string) (map[string]string, error) {
	type group struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	groups := map[group]bool{}
	for _, o := range objects {
		groups[group{o.GroupVersionKind(), o.GetNamespace()}] = true
	}
	live := map[string]string{}
	for g := range groups {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(g.gvk.GroupVersion().WithKind(g.gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels(owner), client.Limit(500)}
		if g.ns != "" {
			opts = append(opts, client.InNamespace(g.ns))
		}
		for {
			if err := c.List(ctx, list, opts...); err != nil {
				return nil, err
			}
			for _, item := range list.Items {
				id := object.ObjMetadata{Namespace: item.Namespace, Name: item.Name, GroupKind: g.gvk.GroupKind()}.String()
				live[id] = item.ResourceVersion
			}
			if list.Continue == "" {
				break
			}
			opts = append(opts, client.Continue(list.Continue))
		}
	}
	return live, nil
}

// newAppliedState records the objects just applied with their live resourceVersions.
func newAppliedState(revision string, e encoded, live map[string]string) *appliedSet {
	s := &appliedSet{revision: revision, objects: e.objects, versions: make(map[string]appliedVersion, len(e.digests))}
	for id, d := range e.digests {
		s.versions[id] = appliedVersion{digest: d, resourceVersion: live[id]}
	}
	return s
}

// LastApplied returns the revision and objects of the owner's last successful apply, if this
// process remembers it.
func (c *Memory) LastApplied(key types.NamespacedName) (string, []*unstructured.Unstructured, bool) {
	s := c.get(key)
	if s == nil {
		return "", nil, false
	}
	objects := make([]*unstructured.Unstructured, 0, len(s.objects))
	for _, b := range s.objects {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			return "", nil, false // encoded by this process: cannot happen
		}
		objects = append(objects, o)
	}
	return s.revision, objects, true
}
