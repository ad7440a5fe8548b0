package gates

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// Of returns the Gates spec of an object: through gatesapi.Gated for typed objects, from `spec.gates` for
// unstructured ones; nil when the object has none.
func Of(obj client.Object) *gatesapi.Gates {
	switch o := obj.(type) {
	case gatesapi.Gated:
		return o.GetGates()
	case *unstructured.Unstructured:
		raw, found, err := unstructured.NestedMap(o.Object, "spec", "gates")
		if err != nil || !found {
			return nil
		}
		g := &gatesapi.Gates{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, g); err != nil {
			return nil
		}
		return g
	}
	return nil
}
