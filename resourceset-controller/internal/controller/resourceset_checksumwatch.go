package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// externalChecksumIndex indexes ResourceSets by their status.externalChecksumRefs.
const externalChecksumIndex = "status.externalChecksumRefs"

// watchChecksumRefs reconciles a ResourceSet when a ConfigMap or Secret that its checksumFrom
// annotations name, and that it does not generate, changes: the checksum, and so the pod
// template, follows at once. The objects are watched metadata only (every change bumps their
// resourceVersion; their data is read by the reconcile).
func (r *ResourceSetReconciler) watchChecksumRefs(ctx context.Context, mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &rsv1.ResourceSet{}, externalChecksumIndex, func(o client.Object) []string {
		return o.(*rsv1.ResourceSet).Status.ExternalChecksumRefs
	}); err != nil {
		return nil, err
	}
	for _, kind := range []string{configMapKind, secretKind} {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
		b = b.Watches(m, handler.EnqueueRequestsFromMapFunc(r.checksumUsers(kind)), builder.OnlyMetadata,
			builder.WithPredicates(predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}))
	}
	return b, nil
}

// checksumUsers maps a ConfigMap or Secret to the ResourceSets whose external refs name it.
func (r *ResourceSetReconciler) checksumUsers(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &rsv1.ResourceSetList{}
		ref := checksumRef{kind, o.GetNamespace(), o.GetName()}.String()
		if err := r.List(ctx, list, client.MatchingFields{externalChecksumIndex: ref}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}
