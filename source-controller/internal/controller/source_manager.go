package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// setupSource registers the controller of a source kind: reconciled on spec changes and
// reconcile requests, and within a second of one of its gates opening (spec.gates index and Gate
// watch).
func setupSource(ctx context.Context, mgr ctrl.Manager, obj client.Object, newList func() client.ObjectList,
	opts controller.Options, r reconcile.Reconciler) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), obj); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{},
		))).
		WithOptions(opts)
	return gates.Watch(b, mgr.GetClient(), newList).Complete(r)
}

// SetupWithManager registers the GitRepository controller.
func (r *GitRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return setupSource(ctx, mgr, &sourcev1.GitRepository{},
		func() client.ObjectList { return &sourcev1.GitRepositoryList{} }, opts, r)
}

// SetupWithManager registers the HelmRepository controller.
func (r *HelmRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return setupSource(ctx, mgr, &sourcev1.HelmRepository{},
		func() client.ObjectList { return &sourcev1.HelmRepositoryList{} }, opts, r)
}
