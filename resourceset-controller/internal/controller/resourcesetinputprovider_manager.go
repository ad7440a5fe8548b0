package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sluice-gitops/sluice/shared/gates"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// SetupWithManager registers the ResourceSetInputProvider controller: a provider is reconciled
// when its spec changes (generation), on a reconcile request (reconcile.fluxcd.io/requestedAt),
// when one of the annotations that configure its reconciliation changes (reconcile,
// reconcileEvery, reconcileTimeout: re-enabling a paused provider resumes it at once), and every
// reconcileEvery, and when a gate it lists opens or closes. Secrets are read from the API server,
// not watched: a changed Secret is used at the next reconcile.
func (r *ResourceSetInputProviderReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &rsv1.ResourceSetInputProvider{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&rsv1.ResourceSetInputProvider{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
			annotationsChanged(rsv1.ReconcileAnnotation, rsv1.ReconcileEveryAnnotation, rsv1.ReconcileTimeoutAnnotation),
		))).
		WithOptions(opts)
	return gates.Watch(b, mgr.GetClient(), func() client.ObjectList { return &rsv1.ResourceSetInputProviderList{} }).Complete(r)
}
