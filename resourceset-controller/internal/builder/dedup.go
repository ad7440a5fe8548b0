package builder

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// objectKey identifies an object for deduplication. The API version is
// reduced to its group: v1beta2 and v1 of one kind name the same object.
type objectKey struct {
	group, kind, namespace, name string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	group, _, found := strings.Cut(u.GetAPIVersion(), "/")
	if !found {
		group = "" // the core group: "v1"
	}
	return objectKey{group: group, kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

// dedup keeps the first object of each key, in order. First wins because
// objects arrive per input with resources before resourcesTemplate, so
// resources take precedence and an object shared by all inputs applies once.
type dedup struct {
	seen    map[objectKey]struct{}
	objects []*unstructured.Unstructured
	// inputOf is the input each object came from first (the index Build was given).
	inputOf []int
}

func newDedup() *dedup {
	return &dedup{seen: map[objectKey]struct{}{}, objects: []*unstructured.Unstructured{}}
}

func (d *dedup) add(u *unstructured.Unstructured, input int) {
	k := keyOf(u)
	if _, ok := d.seen[k]; ok {
		return
	}
	d.seen[k] = struct{}{}
	d.objects = append(d.objects, u)
	d.inputOf = append(d.inputOf, input)
}
