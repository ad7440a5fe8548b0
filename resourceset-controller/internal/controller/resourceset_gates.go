package controller

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/gates"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// reconcileGates evaluates spec.gates: while they are closed nothing new is applied (the caller
// still corrects drift of the last applied state) and Blocked=True says until when. A
// ResourceSet that never applied anything is not ready while blocked.
func (r *ResourceSetReconciler) reconcileGates(ctx context.Context, obj *rsv1.ResourceSet) (bool, error) {
	spec := obj.GetGates()
	res, err := gates.Evaluate(ctx, r.Client, obj.Namespace, spec)
	if err != nil {
		return false, err
	}
	if spec != nil && len(spec.Refs) > 0 {
		log.FromContext(ctx).Info("evaluated gates", "gates", res.LogValue())
	}
	if res.Open {
		conditions.Delete(obj, gates.BlockedCondition)
		return true, nil
	}
	conditions.MarkTrue(obj, gates.BlockedCondition, gates.GateClosedReason, "%s", res.Message())
	if obj.Status.LastAppliedRevision == "" {
		conditions.MarkFalse(obj, meta.ReadyCondition, gates.GateClosedReason, "%s", res.Message())
	}
	return false, nil
}
