package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/deletionset"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// sourceIndex indexes ManifestGenerations by "<kind>/<name>" of their source.
const sourceIndex = "spec.sourceRef"

// SetupWithManager registers the ManifestGeneration controller: a generation is reconciled when
// its spec changes, on a reconcile request, when its source's artifact revision changes, when
// one of its gates opens or closes, and when the approval of its deletion gate changes.
func (r *ManifestGenerationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &generatorv1.ManifestGeneration{}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &generatorv1.ManifestGeneration{}, sourceIndex, func(o client.Object) []string {
		ref := o.(*generatorv1.ManifestGeneration).Spec.SourceRef
		return []string{ref.Kind + "/" + ref.Name}
	}); err != nil {
		return err
	}
	if err := deletionset.SetupIndex(ctx, mgr.GetFieldIndexer(), &generatorv1.ManifestGeneration{}, func(o client.Object) string {
		if a := o.(*generatorv1.ManifestGeneration).Spec.DeletionApproval; a != nil {
			return a.Gate
		}
		return ""
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&generatorv1.ManifestGeneration{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}))).
		WithOptions(opts)
	for _, kind := range []string{generatorv1.GitRepositoryKind, generatorv1.OCIRepositoryKind} {
		b = b.Watches(newSource(kind), handler.EnqueueRequestsFromMapFunc(r.generationsOf(kind)),
			builder.WithPredicates(artifact.RevisionChanged()))
	}
	kind := sharding.Own[generatorv1.ManifestGeneration, generatorv1.ManifestGenerationList]()
	b = deletionset.Watch(gates.Watch(b, mgr.GetClient(), kind.NewList), mgr.GetClient(), kind.NewList)
	return sharding.Complete(b, r.Shards, mgr.GetClient(), kind, r)
}

// generationsOf are the generations whose source is the object.
func (r *ManifestGenerationReconciler) generationsOf(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &generatorv1.ManifestGenerationList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{sourceIndex: kind + "/" + o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, g := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
		return reqs
	}
}
