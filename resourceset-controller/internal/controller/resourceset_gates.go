package controller

import (
	"context"

	"github.com/sluice-gitops/sluice/shared/gates"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// reconcileGates evaluates spec.gates: while they are closed nothing new is applied (the caller
// still corrects drift of the last applied state) and Blocked=True says until when. A
// ResourceSet that never applied anything is not ready while blocked.
func (r *ResourceSetReconciler) reconcileGates(ctx context.Context, obj *rsv1.ResourceSet) (bool, error) {
	return gates.Hold(ctx, r.Client, obj, obj.Status.LastAppliedRevision == "")
}
