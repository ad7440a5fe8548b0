package gates

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// Of returns the gates of an object: its `spec.gates` (through gatesapi.Gated for typed objects,
// from the map for unstructured ones), else the gates its GatesAnnotation names; nil when it has
// neither, or when the annotation does not parse (Spec says why).
func Of(obj client.Object) *gatesapi.Gates {
	g, _ := Spec(obj)
	return g
}

// Spec is Of with the error of an annotation that does not parse. `spec.gates` wins over the
// annotation. The annotation is the portable form of a source's gates: Flux's typed clients
// (`flux export`, `flux create --export`) keep annotations and drop the `spec.gates` their API
// lacks.
func Spec(obj client.Object) (*gatesapi.Gates, error) {
	if g := specGates(obj); g != nil && len(g.Refs) > 0 {
		return g, nil
	}
	value, bound := obj.GetAnnotations()[gatesapi.GatesAnnotation]
	if !bound {
		return specGates(obj), nil
	}
	return gatesapi.ParseGatesAnnotation(value)
}

func specGates(obj client.Object) *gatesapi.Gates {
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
