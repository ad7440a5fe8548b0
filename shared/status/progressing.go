package status

import (
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
