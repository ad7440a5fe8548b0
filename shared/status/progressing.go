package status

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
)

// progressing says at once that a new spec is being reconciled, Reconciling=True and
// Ready=Unknown (ProgressingReason), and writes it with what the preamble changed so far.
func (r *Reconcile) progressing() error {
	conditions.MarkReconciling(r.obj, meta.ProgressingReason, "Reconciliation in progress")
	conditions.MarkUnknown(r.obj, meta.ReadyCondition, meta.ProgressingReason, "Reconciliation in progress")
	return r.patcher.Patch(r.ctx, r.obj, r.finisher.FieldOwner)
}

// Progressing is progressing for the reconcilers that do not start through Preamble yet.
//
// Deprecated: start with Finisher.Begin and Preamble, which say Reconciling for a new generation.
func Progressing(ctx context.Context, patcher *Patcher, obj Object, fieldOwner string) error {
	conditions.MarkReconciling(obj, meta.ProgressingReason, "Reconciliation in progress")
	conditions.MarkUnknown(obj, meta.ReadyCondition, meta.ProgressingReason, "Reconciliation in progress")
	return patcher.Patch(ctx, obj, fieldOwner)
}
