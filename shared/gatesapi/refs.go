package gatesapi

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ResolveRef turns a ref (`name` or `namespace/name`) into the key of the Gate it names; a bare
// name is looked up in the namespace of the object that refers to it.
func ResolveRef(namespace, ref string) types.NamespacedName {
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Namespace: namespace, Name: ref}
}

// Gated is implemented by API types that embed a Gates spec. Its object part is
// controller-runtime's client.Object, spelled with apimachinery's interfaces.
// +kubebuilder:object:generate=false
type Gated interface {
	metav1.Object
	runtime.Object
	GetGates() *Gates
}
