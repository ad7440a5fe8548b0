package artifact

import (
	"fmt"

	meta "github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromObject reads `status.artifact` of a source object of any kind (GitRepository, HelmChart,
// OCIRepository, ...) read as unstructured. It returns nil when the source has no artifact yet.
func FromObject(obj *unstructured.Unstructured) (*meta.Artifact, error) {
	raw, found, err := unstructured.NestedMap(obj.Object, "status", "artifact")
	if err != nil {
		return nil, fmt.Errorf("%s '%s/%s': status.artifact is malformed: %w",
			obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	if !found {
		return nil, nil
	}
	art := &meta.Artifact{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, art); err != nil {
		return nil, fmt.Errorf("%s '%s/%s': status.artifact is malformed: %w",
			obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return art, nil
}
