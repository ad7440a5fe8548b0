package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/sluice-gitops/sluice/shared/apply"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// GarbageCollectionSucceededReason is the reason of the event listing pruned objects.
const GarbageCollectionSucceededReason = "GarbageCollectionSucceeded"

// prunedEvent lists the objects garbage collection removed and how long it took.
func (r *ResourceSetReconciler) prunedEvent(obj *rsv1.ResourceSet, res *apply.Result) {
	if res == nil || len(res.Pruned) == 0 {
		return
	}
	r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, GarbageCollectionSucceededReason, "%s\nGarbage collection finished in %s",
		strings.Join(res.Pruned, "\n"), apply.FmtDuration(res.PruneDuration))
}

// reconcileDelete removes what the ResourceSet applied, then its finalizer. A paused
// (reconcile: disabled) ResourceSet leaves its objects; so does one whose account is gone, with
// a warning, rather than block its deletion forever.
func (r *ResourceSetReconciler) reconcileDelete(ctx context.Context, obj *rsv1.ResourceSet) error {
	if !controllerutil.ContainsFinalizer(obj, rsv1.Finalizer) {
		return nil
	}
	if !obj.IsDisabled() && obj.Status.Inventory != nil && len(obj.Status.Inventory.Entries) > 0 {
		cl, err := r.clientFor(ctx, obj)
		if err != nil {
			r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, rsv1.ReconciliationFailedReason,
				"the generated objects were left in place: %s", userMessage(err))
		} else {
			start := time.Now()
			pruned, err := r.applier(cl).Delete(ctx, client.ObjectKeyFromObject(obj), entries(obj.Status.Inventory))
			if err != nil {
				return fmt.Errorf("garbage collection: %w", err)
			}
			r.prunedEvent(obj, &apply.Result{Pruned: pruned, PruneDuration: time.Since(start)})
		}
	}
	r.applied.Forget(client.ObjectKeyFromObject(obj))
	controllerutil.RemoveFinalizer(obj, rsv1.Finalizer)
	return nil
}
