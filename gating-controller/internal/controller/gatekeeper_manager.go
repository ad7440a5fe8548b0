package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// SetupWithManager registers the GateKeeper controller; it needs the index the Gate controller
// registers, so it is set up after it. Gates appearing or going away re-evaluate their keepers.
func (r *GateKeeperReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&gatingv1.GateKeeper{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
		))).
		Watches(&gatingv1.Gate{}, handler.EnqueueRequestsFromMapFunc(r.keepersOfGate),
			builder.WithPredicates(gateCreatedOrDeleted())).
		WithOptions(opts).
		Complete(r)
}

func (r *GateKeeperReconciler) keepersOfGate(ctx context.Context, o client.Object) []reconcile.Request {
	list := &gatingv1.GateKeeperList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{gateKeeperGateIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, gk := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gk)})
	}
	return reqs
}

func gateCreatedOrDeleted() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(_ event.UpdateEvent) bool { return false },
	}
}
