package fluxreceiver

import (
	"context"

	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"

	"github.com/sluice-gitops/sluice/shared/sharding"
)

// WebhookPathIndex indexes Receivers by status.webhookPath: the server finds the Receiver of a
// request's path through it.
const WebhookPathIndex = "status.webhookPath"

// SetupWithManager registers the index of webhook paths and the Receiver controller: a Receiver
// is reconciled when its spec changes, when reconcile.fluxcd.io/requestedAt asks for it, and at
// its interval, which is when a rotated token gets its new path.
func (r *ReceiverReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &notificationv1.Receiver{}, WebhookPathIndex, func(o client.Object) []string {
		if path := o.(*notificationv1.Receiver).Status.WebhookPath; path != "" {
			return []string{path}
		}
		return nil
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&notificationv1.Receiver{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
		))).
		WithOptions(opts)
	return sharding.Complete(b, r.Shards, mgr.GetClient(), sharding.Own[notificationv1.Receiver, notificationv1.ReceiverList](), r)
}
