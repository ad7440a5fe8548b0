package patch

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Apply applies a patch file to the generated objects and returns the
// patched objects, in the order of generated (which is not modified).
//
// Each document of the patch file is a partial resource naming its object
// by apiVersion, kind, metadata.namespace and metadata.name. Kinds the
// scheme knows get a strategic merge patch with their Go type as the
// schema (k8s.io/apimachinery strategicpatch), so that lists like
// containers merge by name; every other kind (custom resources) gets a
// JSON merge patch (RFC 7386, evanphx/json-patch). A nil scheme means
// client-go's scheme of the built-in kinds. Do not pass a scheme holding
// custom resource types: their lists would be replaced, not merged, by
// patches that were computed as JSON merge patches (and kustomize and
// kubectl treat them the same way).
//
// An entry whose object is not among generated is not an error: it is
// returned in dropped (in file order) so that the caller can warn about it.
// A malformed patch file is an error naming the document.
func Apply(generated []*unstructured.Unstructured, patchFile []byte, scheme *runtime.Scheme) (patched []*unstructured.Unstructured, dropped []ID, err error) {
	docs, err := parseFile(patchFile)
	if err != nil {
		return nil, nil, err
	}
	entries := map[key]*document{}
	for _, d := range docs {
		if d.isEntry() {
			entries[d.id.key()] = d
		}
	}
	used := map[key]bool{}
	patched = make([]*unstructured.Unstructured, 0, len(generated))
	for _, obj := range generated {
		k := IDOf(obj).key()
		d, ok := entries[k]
		if !ok {
			patched = append(patched, obj.DeepCopy())
			continue
		}
		used[k] = true
		p, err := applyEntry(obj, d.patch, scheme)
		if err != nil {
			return nil, nil, fmt.Errorf("patch file document %d (%s): %w", d.index, d.id, err)
		}
		patched = append(patched, p)
	}
	for _, d := range docs {
		if d.isEntry() && !used[d.id.key()] {
			dropped = append(dropped, d.id)
		}
	}
	return patched, dropped, nil
}

// applyEntry patches a copy of obj. The entry's apiVersion and kind are
// those of obj, whatever version the entry was written for.
func applyEntry(obj *unstructured.Unstructured, patch map[string]any, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	p := make(map[string]any, len(patch))
	for k, v := range patch {
		p[k] = v
	}
	p["apiVersion"], p["kind"] = obj.GetAPIVersion(), obj.GetKind()
	original, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	patchJSON, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	schema, err := schemaFor(obj, scheme)
	if err != nil {
		return nil, err
	}
	var result []byte
	if schema != nil {
		result, err = strategicpatch.StrategicMergePatch(original, patchJSON, schema)
	} else {
		result, err = jsonpatch.MergePatch(original, patchJSON)
	}
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(result); err != nil {
		return nil, err
	}
	return out, nil
}

// schemaFor is the typed object that drives strategic merge patches of
// obj, or nil when obj is to be patched with JSON merge patches.
func schemaFor(obj *unstructured.Unstructured, scheme *runtime.Scheme) (runtime.Object, error) {
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	typed, err := scheme.New(obj.GroupVersionKind())
	switch {
	case runtime.IsNotRegisteredError(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if _, ok := typed.(runtime.Unstructured); ok {
		return nil, nil
	}
	return typed, nil
}
