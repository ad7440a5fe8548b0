package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"
)

// setupSource registers the controller of a source kind: reconciled on spec changes and
// reconcile requests, and within a second of one of its gates opening (spec.gates index and Gate
// watch).
func setupSource(ctx context.Context, mgr ctrl.Manager, obj client.Object, newList func() client.ObjectList,
	opts controller.Options, shards *sharding.Shards, r reconcile.Reconciler) error {
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), obj); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{},
		))).
		WithOptions(opts)
	return completeSource(b, shards, mgr.GetClient(), obj, newList, r)
}

// completeSource builds a source kind's controller with the gates' watch and, with --sharding,
// behind the shards.
func completeSource(b *builder.Builder, shards *sharding.Shards, c client.Client, obj client.Object,
	newList func() client.ObjectList, r reconcile.Reconciler) error {
	return sharding.Complete(gates.Watch(b, c, newList), shards, c, sharding.Kind{
		NewList: newList, NewObject: func() client.Object { return obj.DeepCopyObject().(client.Object) },
	}, r)
}

// artifactChanged lets through a source's updates that change its artifact, revision or
// digest: an included repository rebuilt at the same commit (its spec.ignore changed) changes
// the content of those that include it.
func artifactChanged() predicate.Predicate {
	id := func(o client.Object) string {
		if s, ok := o.(source); ok && s.GetArtifact() != nil {
			return s.GetArtifact().Revision + "|" + s.GetArtifact().Digest
		}
		return ""
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return id(e.ObjectOld) != id(e.ObjectNew) },
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
	}
}

// artifactRevisionChanged lets through a source's updates that change its artifact revision.
func artifactRevisionChanged() predicate.Predicate {
	revision := func(o client.Object) string {
		if s, ok := o.(source); ok && s.GetArtifact() != nil {
			return s.GetArtifact().Revision
		}
		return ""
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return revision(e.ObjectOld) != revision(e.ObjectNew) },
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
	}
}
