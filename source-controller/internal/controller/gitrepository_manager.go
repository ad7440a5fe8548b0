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

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// SetupWithManager watches GitRepositories (spec changes and reconcile requests) and the Gates
// they wait on, so an opened gate releases them at once.
func (r *GitRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &sourcev1.GitRepository{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.GitRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{},
		))).
		WithOptions(opts)
	return gates.Watch(b, mgr.GetClient(), func() client.ObjectList { return &sourcev1.GitRepositoryList{} }).Complete(r)
}
