package patch

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// UpdateOption configures Update.
type UpdateOption func(*updateOptions)

type updateOptions struct {
	defaultNamespace string
}

// WithDefaultNamespace sets the namespace that generated objects without
// one belong to, for matching the workload reference (see workload.Ref).
func WithDefaultNamespace(namespace string) UpdateOption {
	return func(o *updateOptions) { o.defaultNamespace = namespace }
}

// Update records a change of one generated workload in the patch file. It
// applies the patch file to the workload ref names, runs change on the
// result (e.g. workload.SetImage or workload.SetPolicy), computes Diff
// between the generated workload and the changed one, and writes that as
// the workload's entry: in place of its current entry (other documents keep
// their place and their bytes), appended when there was none, removed when
// it became empty. New entries are written by sigs.k8s.io/yaml, with
// sorted keys. When change reports no change, or the entry stays the same,
// the patch file is returned as it was, with changed false.
//
// Update checks that the new patch file reproduces the change; entries of
// objects that are not generated any more are kept (Apply reports them). It reads best
// whole: the steps above, in order.
func Update(generated []*unstructured.Unstructured, patchFile []byte, ref workload.Ref, change func(*unstructured.Unstructured) (bool, error), scheme *runtime.Scheme, opts ...UpdateOption) (newPatchFile []byte, changed bool, err error) {
	var o updateOptions
	for _, opt := range opts {
		opt(&o)
	}
	docs, err := parseFile(patchFile)
	if err != nil {
		return nil, false, err
	}

	var target *unstructured.Unstructured
	for _, obj := range generated {
		if !ref.Matches(obj, o.defaultNamespace) {
			continue
		}
		if target != nil {
			return nil, false, fmt.Errorf("workload %s is generated more than once", ref)
		}
		target = obj
	}
	if target == nil {
		return nil, false, fmt.Errorf("workload %s is not among the generated resources", ref)
	}
	id := IDOf(target)

	var entry *document
	for _, d := range docs {
		if d.isEntry() && d.id.key() == id.key() {
			entry = d
		}
	}
	current := target.DeepCopy()
	if entry != nil {
		if current, err = applyEntry(target, entry.patch, scheme); err != nil {
			return nil, false, fmt.Errorf("patch file document %d (%s): %w", entry.index, entry.id, err)
		}
	}
	updated := current.DeepCopy()
	ok, err := change(updated)
	if err != nil {
		return nil, false, fmt.Errorf("changing %s: %w", ref, err)
	}
	if !ok {
		return patchFile, false, nil
	}

	patch, err := Diff(target, updated, scheme)
	if err != nil {
		return nil, false, err
	}
	if entry != nil && sameJSON(entry.patch, patch) {
		return patchFile, false, nil
	}
	var text []byte
	if len(patch) > 0 {
		if text, err = yaml.Marshal(patch); err != nil {
			return nil, false, err
		}
	}

	var out [][]byte
	for _, d := range docs {
		switch {
		case d != entry:
			out = append(out, d.text)
		case text != nil:
			out = append(out, text)
		}
	}
	if entry == nil && text != nil {
		out = append(out, text)
	}
	newPatchFile = render(out)

	// The patch file must now produce the changed workload.
	patched, _, err := Apply([]*unstructured.Unstructured{target}, newPatchFile, scheme)
	if err != nil {
		return nil, false, fmt.Errorf("the updated patch file does not apply: %w", err)
	}
	if !sameJSON(patched[0].Object, updated.Object) {
		return nil, false, fmt.Errorf("the patch for %s does not reproduce the change", id)
	}
	return newPatchFile, true, nil
}

// sameJSON compares two values by their JSON form, so that numbers of
// different Go types compare equal.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
