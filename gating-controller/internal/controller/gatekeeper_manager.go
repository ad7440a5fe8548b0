package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"

	"github.com/sluice-gitops/sluice/shared/sharding"
)

// SetupWithManager registers the GateKeeper controller; it needs the index the Gate controller
// registers, so it is set up after it. Gates appearing or going away, or getting a new request,
// re-evaluate their keepers, and so do changes of the ConfigMaps and sources of their calendars
// (watched by their metadata only; a source kind when its CRD is installed). It registers the
// indexes of keepers by calendar ConfigMap and by calendar source.
func (r *GateKeeperReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	// Keepers by the ConfigMap or source of their calendar: a change of it re-evaluates them,
	// and their gates (the Gate controller's watches use the same indexes).
	if err := mgr.GetFieldIndexer().IndexField(ctx, &gatingv1.GateKeeper{}, gateKeeperConfigMapIndex, calendarConfigMap); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &gatingv1.GateKeeper{}, gateKeeperSourceIndex, calendarSource); err != nil {
		return err
	}
	r.apiReader = mgr.GetAPIReader()
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gatingv1.GateKeeper{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
		))).
		Watches(&gatingv1.Gate{}, handler.EnqueueRequestsFromMapFunc(r.keepersOfGate),
			builder.WithPredicates(gateCreatedDeletedOrRequested())).
		WatchesMetadata(configMapMetadata(), handler.EnqueueRequestsFromMapFunc(r.keepersOfCalendar))
	b, r.watched = watchCalendarSources(b, mgr, true, keeperRequests)
	return sharding.Complete(b.WithOptions(opts), r.Shards, mgr.GetClient(), sharding.Own[gatingv1.GateKeeper, gatingv1.GateKeeperList](), r)
}

func (r *GateKeeperReconciler) keepersOfGate(ctx context.Context, o client.Object) []reconcile.Request {
	list := &gatingv1.GateKeeperList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{gateKeeperGateIndex: o.GetName()}); err != nil {
		return nil
	}
	return keeperRequests(list.Items)
}

// gateCreatedDeletedOrRequested passes Gates that appear or go away, and those whose request in
// force changes: a keeper's message says when a request overrides it.
func gateCreatedDeletedOrRequested() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*gatingv1.Gate)
			n, okNew := e.ObjectNew.(*gatingv1.Gate)
			if !okOld || !okNew {
				return false
			}
			return !equality.Semantic.DeepEqual(o.Status.Request, n.Status.Request) ||
				!equality.Semantic.DeepEqual(o.Status.RequestedAt, n.Status.RequestedAt) ||
				!equality.Semantic.DeepEqual(o.Status.ResetToDefaultAt, n.Status.ResetToDefaultAt)
		},
	}
}
