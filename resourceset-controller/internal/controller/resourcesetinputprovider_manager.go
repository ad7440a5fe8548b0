package controller

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// SetupWithManager registers the ResourceSetInputProvider controller: a provider is reconciled
// when its spec changes (generation), on a reconcile request (reconcile.fluxcd.io/requestedAt),
// when one of the annotations that configure its reconciliation changes (reconcile,
// reconcileEvery, reconcileTimeout: re-enabling a paused provider resumes it at once), and every
// reconcileEvery, and when a gate it lists opens or closes. Secrets are read from the API server,
// not watched: a changed Secret is used at the next reconcile. When the ExternalArtifact CRD is
// installed as the controller starts, a changed ExternalArtifact reconciles the providers that
// select it at once; otherwise they read them at their interval.
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
	if _, err := mgr.GetRESTMapper().RESTMapping(externalArtifactGVK.GroupKind(), externalArtifactGVK.Version); err == nil {
		artifact := &unstructured.Unstructured{}
		artifact.SetGroupVersionKind(externalArtifactGVK)
		b = b.Watches(artifact, handler.EnqueueRequestsFromMapFunc(r.providersSelecting))
	} else {
		ctrl.Log.WithName(ControllerName).Info("the ExternalArtifact CRD is not installed: ExternalArtifact providers read them at their interval")
	}
	kind := sharding.Own[rsv1.ResourceSetInputProvider, rsv1.ResourceSetInputProviderList]()
	return sharding.Complete(gates.Watch(b, mgr.GetClient(), kind.NewList), r.Shards, mgr.GetClient(), kind, r)
}

// providersSelecting are the ExternalArtifact providers that select the artifact.
func (r *ResourceSetInputProviderReconciler) providersSelecting(ctx context.Context, artifact client.Object) []reconcile.Request {
	var list rsv1.ResourceSetInputProviderList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if p.Spec.Type != rsv1.InputProviderExternalArtifact {
			continue
		}
		for _, sel := range p.Spec.Selectors {
			if selectsArtifact(p.Namespace, sel, artifact) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
				break
			}
		}
	}
	return out
}
