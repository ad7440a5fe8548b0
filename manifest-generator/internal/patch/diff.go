package patch

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Diff returns the patch file entry that turns generated into updated: a
// two-way strategic merge patch for kinds the scheme knows
// (strategicpatch.CreateTwoWayMergePatch), a JSON merge patch otherwise
// (jsonpatch.CreateMergePatch); see Apply for the scheme. A non-empty patch
// carries the apiVersion, kind, metadata.name and metadata.namespace of
// generated, so that it names its object; the patch is empty (not nil) when
// the objects are equal. Numbers are int64 or float64, as in unstructured
// objects.
func Diff(generated, updated *unstructured.Unstructured, scheme *runtime.Scheme) (map[string]any, error) {
	original, err := json.Marshal(generated.Object)
	if err != nil {
		return nil, err
	}
	modified, err := json.Marshal(updated.Object)
	if err != nil {
		return nil, err
	}
	schema, err := schemaFor(generated, scheme)
	if err != nil {
		return nil, err
	}
	var patchJSON []byte
	if schema != nil {
		patchJSON, err = strategicpatch.CreateTwoWayMergePatch(original, modified, schema)
	} else {
		patchJSON, err = jsonpatch.CreateMergePatch(original, modified)
	}
	if err != nil {
		return nil, fmt.Errorf("computing the patch for %s: %w", IDOf(generated), err)
	}
	patch := map[string]any{}
	if err := utiljson.Unmarshal(patchJSON, &patch); err != nil {
		return nil, err
	}
	if len(patch) == 0 {
		return patch, nil
	}
	patch["apiVersion"] = generated.GetAPIVersion()
	patch["kind"] = generated.GetKind()
	metadata, ok := patch["metadata"].(map[string]any)
	if !ok {
		metadata = map[string]any{}
		patch["metadata"] = metadata
	}
	metadata["name"] = generated.GetName()
	if ns := generated.GetNamespace(); ns != "" {
		metadata["namespace"] = ns
	}
	return patch, nil
}
