package gates

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ResolveRef turns a ref (`name` or `namespace/name`) into the key of the Gate it names; a bare
// name is looked up in the namespace of the object that refers to it.
func ResolveRef(namespace, ref string) types.NamespacedName {
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Namespace: namespace, Name: ref}
}

// Gated is implemented by API types that embed a Gates spec.
// +kubebuilder:object:generate=false
type Gated interface {
	client.Object
	GetGates() *Gates
}

// Of returns the Gates spec of an object: through Gated for typed objects, from `spec.gates` for
// unstructured ones; nil when the object has none.
func Of(obj client.Object) *Gates {
	switch o := obj.(type) {
	case Gated:
		return o.GetGates()
	case *unstructured.Unstructured:
		raw, found, err := unstructured.NestedMap(o.Object, "spec", "gates")
		if err != nil || !found {
			return nil
		}
		g := &Gates{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, g); err != nil {
			return nil
		}
		return g
	}
	return nil
}
