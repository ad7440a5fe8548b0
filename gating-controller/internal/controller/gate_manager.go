package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"

	"github.com/sluice-gitops/sluice/shared/sharding"
)

// gateKeeperGateIndex indexes GateKeepers by the name of the gate they keep.
const gateKeeperGateIndex = "spec.gate"

// SetupWithManager registers the GateKeeper index and the Gate controller: a Gate is reconciled
// when its spec or annotations (requests) change, when one of its GateKeepers changes, and when
// the ConfigMap or source of a keeper's calendar changes.
func (r *GateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &gatingv1.GateKeeper{}, gateKeeperGateIndex,
		func(o client.Object) []string { return []string{o.(*gatingv1.GateKeeper).Spec.Gate} }); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &gatingv1.GateApproval{}, gateApprovalGateIndex,
		func(o client.Object) []string { return []string{o.(*gatingv1.GateApproval).Spec.Gate} }); err != nil {
		return err
	}
	r.apiReader = mgr.GetAPIReader()
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gatingv1.Gate{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
		))).
		Watches(&gatingv1.GateKeeper{}, handler.EnqueueRequestsFromMapFunc(keptGate),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(configMapMetadata(), handler.EnqueueRequestsFromMapFunc(r.gatesOfCalendar)).
		Watches(&gatingv1.GateApproval{}, handler.EnqueueRequestsFromMapFunc(approvedGate))
	// The GateKeeper controller logs the source kinds it does not watch.
	b, r.watched = watchCalendarSources(b, mgr, false, keptGates)
	return sharding.Complete(b.WithOptions(opts), r.Shards, mgr.GetClient(), sharding.Own[gatingv1.Gate, gatingv1.GateList](), r)
}

// approvedGate maps a GateApproval to the Gate it responds to.
func approvedGate(_ context.Context, o client.Object) []reconcile.Request {
	ga := o.(*gatingv1.GateApproval)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ga.Namespace, Name: ga.Spec.Gate}}}
}

// keptGate maps a GateKeeper to the Gate it keeps.
func keptGate(_ context.Context, o client.Object) []reconcile.Request {
	gk := o.(*gatingv1.GateKeeper)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: gk.Namespace, Name: gk.Spec.Gate}}}
}
