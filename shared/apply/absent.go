package apply

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listThreshold is the number of objects of one kind in one namespace from which a metadata
// LIST of that kind and namespace is cheaper than a GET per object.
const listThreshold = 16

// absentClient answers the GET that fluxcd/pkg/ssa makes before the dry-run of every object,
// for objects that do not exist, without a request: for each kind and namespace with many
// objects to apply, one metadata LIST (made on the first GET, so after the CRDs of an earlier
// stage exist) tells which names exist. A name the LIST did not see gets NotFound; every other
// GET, and every other request, goes to the API server. A first apply of N objects thus costs
// a LIST instead of N GETs. An object created by someone else between the LIST and its dry-run
// is still handled right: the dry-run returns it, and it is applied over.
//
// In a first apply (the owner has no inventory: nothing of it exists that a half-applied set
// could break), the dry-run of an object the LIST did not see is skipped as well: the apply
// itself validates it. A first apply of N objects then costs N applies and a LIST per kind and
// namespace. Later applies dry-run every object before applying any.
type absentClient struct {
	client.Client
	groups     map[groupKey]*listedGroup
	firstApply bool
}

type groupKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

type listedGroup struct {
	once  sync.Once
	names map[string]bool // nil when the LIST failed: GETs go to the server
}

// newAbsentClient prepares the groups of objects worth a LIST.
func newAbsentClient(c client.Client, objects []*unstructured.Unstructured, firstApply bool) *absentClient {
	counts := map[groupKey]int{}
	for _, o := range objects {
		counts[groupKey{o.GroupVersionKind(), o.GetNamespace()}]++
	}
	a := &absentClient{Client: c, groups: map[groupKey]*listedGroup{}, firstApply: firstApply}
	for k, n := range counts {
		if n >= listThreshold {
			a.groups[k] = &listedGroup{}
		}
	}
	return a
}

// Get answers NotFound for a name its group's LIST did not see.
func (a *absentClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && a.absent(ctx, u.GroupVersionKind(), key) {
		gvk := u.GroupVersionKind()
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	return a.Client.Get(ctx, key, obj, opts...)
}

// Patch skips, in a first apply, the dry-run of an object its group's LIST did not see.
func (a *absentClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && a.firstApply && isDryRun(opts) &&
		a.absent(ctx, u.GroupVersionKind(), client.ObjectKeyFromObject(u)) {
		return nil
	}
	return a.Client.Patch(ctx, obj, patch, opts...)
}

// absent tells whether the LIST of the object's group did not see it; false when the group is
// not listed or its LIST failed.
func (a *absentClient) absent(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) bool {
	g := a.groups[groupKey{gvk, key.Namespace}]
	if g == nil {
		return false
	}
	g.once.Do(func() { g.names = a.list(ctx, gvk, key.Namespace) })
	return g.names != nil && !g.names[key.Name]
}

// list returns the names of the objects of a kind in a namespace, nil when it cannot tell.
func (a *absentClient) list(ctx context.Context, gvk schema.GroupVersionKind, namespace string) map[string]bool {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.Limit(500)}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	names := map[string]bool{}
	for {
		if err := a.Client.List(ctx, list, opts...); err != nil {
			return nil
		}
		for _, item := range list.Items {
			names[item.Name] = true
		}
		if list.Continue == "" {
			return names
		}
		opts = append(opts, client.Continue(list.Continue))
	}
}
