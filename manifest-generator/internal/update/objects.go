package update

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// findWorkload is the one object ref names.
func findWorkload(objs []*unstructured.Unstructured, ref workload.Ref, namespace string) (*unstructured.Unstructured, error) {
	var found *unstructured.Unstructured
	for _, o := range objs {
		if ref.Matches(o, namespace) {
			if found != nil {
				return nil, fmt.Errorf("workload %s is defined more than once", ref)
			}
			found = o
		}
	}
	if found == nil {
		return nil, fmt.Errorf("workload %s does not exist", ref)
	}
	return found, nil
}

func objectMap(objs []*unstructured.Unstructured) map[string]map[string]any {
	m := make(map[string]map[string]any, len(objs))
	for _, o := range objs {
		m[describe(o)+"|"+o.GetAPIVersion()] = o.Object
	}
	return m
}

// describe names an object in messages: "Deployment default/app".
func describe(o *unstructured.Unstructured) string {
	ns := o.GetNamespace()
	if ns == "" {
		ns = "<default>"
	}
	return fmt.Sprintf("%s %s/%s", o.GetKind(), ns, o.GetName())
}
