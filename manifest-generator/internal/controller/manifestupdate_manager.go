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

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// generationRefIndex indexes ManifestUpdates by the name of their ManifestGeneration.
const generationRefIndex = "spec.generationRef.name"

// SetupWithManager registers the ManifestUpdate controller: an update is reconciled when its
// spec changes, on a reconcile request, when one of its gates opens or closes, and when the
// gates of its ManifestGeneration or of that generation's GitRepository start or stop holding
// them (a committed change says whether it waits behind them).
func (r *ManifestUpdateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &generatorv1.ManifestUpdate{}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &generatorv1.ManifestUpdate{}, generationRefIndex, func(o client.Object) []string {
		return []string{o.(*generatorv1.ManifestUpdate).Spec.GenerationRef.Name}
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&generatorv1.ManifestUpdate{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}))).
		Watches(&generatorv1.ManifestGeneration{}, handler.EnqueueRequestsFromMapFunc(r.updatesOfGeneration),
			builder.WithPredicates(gates.HeldChanged())).
		Watches(newSource(generatorv1.GitRepositoryKind), handler.EnqueueRequestsFromMapFunc(r.updatesOfRepository),
			builder.WithPredicates(gates.HeldChanged())).
		WithOptions(opts)
	kind := sharding.Own[generatorv1.ManifestUpdate, generatorv1.ManifestUpdateList]()
	return sharding.Complete(gates.Watch(b, mgr.GetClient(), kind.NewList), r.Shards, mgr.GetClient(), kind, r)
}

// updatesOfGeneration are the updates that write for the generation o.
func (r *ManifestUpdateReconciler) updatesOfGeneration(ctx context.Context, o client.Object) []reconcile.Request {
	list := &generatorv1.ManifestUpdateList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{generationRefIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, u := range list.Items {
		if u.Status.Commit != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&u)})
		}
	}
	return reqs
}

// updatesOfRepository are the updates of the generations that read the GitRepository o.
func (r *ManifestUpdateReconciler) updatesOfRepository(ctx context.Context, o client.Object) []reconcile.Request {
	gens := &generatorv1.ManifestGenerationList{}
	if err := r.List(ctx, gens, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, g := range gens.Items {
		if g.Spec.SourceRef.Kind == generatorv1.GitRepositoryKind && g.Spec.SourceRef.Name == o.GetName() {
			reqs = append(reqs, r.updatesOfGeneration(ctx, &g)...)
		}
	}
	return reqs
}
