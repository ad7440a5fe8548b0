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

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// SetupWithManager registers the ManifestUpdate controller: an update is reconciled when its
// spec changes, on a reconcile request, and when one of its gates opens or closes.
func (r *ManifestUpdateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &generatorv1.ManifestUpdate{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&generatorv1.ManifestUpdate{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}))).
		WithOptions(opts)
	return gates.Watch(b, mgr.GetClient(), func() client.ObjectList { return &generatorv1.ManifestUpdateList{} }).Complete(r)
}
