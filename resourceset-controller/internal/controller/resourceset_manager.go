package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/predicates"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/deletionset"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// dependsOnIndex indexes ResourceSets by the ResourceSets they depend on ("<namespace>/<name>").
const dependsOnIndex = "spec.dependsOn.resourceset"

// SetupWithManager registers the ResourceSet controller. A ResourceSet is reconciled when its
// spec or reconcile annotations change, when a provider it uses exports new inputs, when a gate
// it lists opens or closes, when a ResourceSet it depends on becomes ready or not, when an
// object of another kind it depends on changes (dependencyWatches), and when a ConfigMap or
// Secret its checksumFrom annotations name changes.
func (r *ResourceSetReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &rsv1.ResourceSet{}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &rsv1.ResourceSet{}, dependsOnIndex, func(o client.Object) []string {
		var keys []string
		for _, d := range o.(*rsv1.ResourceSet).Spec.DependsOn {
			if d.Kind == rsv1.ResourceSetKind && d.APIVersion == rsv1.GroupVersion.String() {
				ns := d.Namespace
				if ns == "" {
					ns = o.GetNamespace()
				}
				keys = append(keys, ns+"/"+d.Name)
			}
		}
		return keys
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &rsv1.ResourceSet{}, dependsOnObjectIndex, dependsOnKeys); err != nil {
		return err
	}
	if err := deletionset.SetupIndex(ctx, mgr.GetFieldIndexer(), &rsv1.ResourceSet{}, func(o client.Object) string {
		if a := o.(*rsv1.ResourceSet).Spec.DeletionApproval; a != nil {
			return a.Gate
		}
		return ""
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&rsv1.ResourceSet{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{},
			annotationsChanged(rsv1.ReconcileAnnotation, rsv1.ReconcileEveryAnnotation, rsv1.ReconcileTimeoutAnnotation, rsv1.ForceAnnotation,
				rsv1.AllowPruneAnnotation),
		))).
		Watches(&rsv1.ResourceSetInputProvider{}, handler.EnqueueRequestsFromMapFunc(r.usersOfProvider),
			builder.WithPredicates(exportedInputsChanged())).
		Watches(&rsv1.ResourceSet{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(readinessChanged())).
		WithOptions(opts)
	b, err := r.watchChecksumRefs(ctx, mgr, b)
	if err != nil {
		return err
	}
	kind := sharding.Own[rsv1.ResourceSet, rsv1.ResourceSetList]()
	b = deletionset.Watch(gates.Watch(b, mgr.GetClient(), kind.NewList), mgr.GetClient(), kind.NewList)
	c, err := sharding.Build(b, r.Shards, mgr.GetClient(), kind, r)
	if err != nil {
		return err
	}
	r.dependencyWatches = &dependencyWatches{ctrl: c, cache: mgr.GetCache(), mapper: mgr.GetRESTMapper(), list: r.dependentsByKey}
	return nil
}

// dependentsByKey are the ResourceSets that depend on the object of a dependsOnObjectIndex key.
func (r *ResourceSetReconciler) dependentsByKey(ctx context.Context, key string) []reconcile.Request {
	list := &rsv1.ResourceSetList{}
	if err := r.List(ctx, list, client.MatchingFields{dependsOnObjectIndex: key}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, rs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
	}
	return reqs
}

// usersOfProvider are the ResourceSets of the provider's namespace that select it.
func (r *ResourceSetReconciler) usersOfProvider(ctx context.Context, o client.Object) []reconcile.Request {
	list := &rsv1.ResourceSetList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, rs := range list.Items {
		for _, ref := range rs.Spec.InputsFrom {
			if selects(ref, o) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
				break
			}
		}
	}
	return reqs
}

// selects reports whether an inputsFrom entry selects the provider.
func selects(ref rsv1.InputProviderReference, o client.Object) bool {
	if ref.Name != "" {
		return ref.Name == o.GetName()
	}
	sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
	return err == nil && sel.Matches(labels.Set(o.GetLabels()))
}

// dependents are the ResourceSets that depend on a ResourceSet.
func (r *ResourceSetReconciler) dependents(ctx context.Context, o client.Object) []reconcile.Request {
	list := &rsv1.ResourceSetList{}
	if err := r.List(ctx, list, client.MatchingFields{dependsOnIndex: fmt.Sprintf("%s/%s", o.GetNamespace(), o.GetName())}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, rs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
	}
	return reqs
}

// exportedInputsChanged passes provider events that change what ResourceSets read: new
// exported inputs, or a provider appearing or going away.
func exportedInputsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldP, okOld := e.ObjectOld.(*rsv1.ResourceSetInputProvider)
			newP, okNew := e.ObjectNew.(*rsv1.ResourceSetInputProvider)
			return okOld && okNew && (oldP.Status.LastExportedRevision != newP.Status.LastExportedRevision ||
				readyStatus(oldP) != readyStatus(newP) || !labels.Equals(oldP.Labels, newP.Labels))
		},
	}
}

// readinessChanged passes ResourceSet updates that change its Ready status or observed
// generation: what a dependent's `ready: true` looks at.
func readinessChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldR, okOld := e.ObjectOld.(*rsv1.ResourceSet)
			newR, okNew := e.ObjectNew.(*rsv1.ResourceSet)
			return okOld && okNew && (readyStatus(oldR) != readyStatus(newR) || oldR.Status.ObservedGeneration != newR.Status.ObservedGeneration)
		},
	}
}

func readyStatus(o conditions.Getter) string {
	if c := conditions.Get(o, meta.ReadyCondition); c != nil {
		return string(c.Status)
	}
	return ""
}

// annotationsChanged passes updates that change one of the annotations.
func annotationsChanged(keys ...string) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			for _, k := range keys {
				if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
					return true
				}
			}
			return false
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
