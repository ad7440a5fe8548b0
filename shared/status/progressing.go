package status

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
)

// Progressing says at once that a new spec is being reconciled, Reconciling=True and
// Ready=Unknown (ProgressingReason), and writes it: kstatus readers wait on it, and the steps
// that follow may take up to the object's timeout.
func Progressing(ctx context.Context, patcher *Patcher, obj Object, fieldOwner string) error {
	conditions.MarkReconciling(obj, meta.ProgressingReason, "Reconciliation in progress")
	conditions.MarkUnknown(obj, meta.ReadyCondition, meta.ProgressingReason, "Reconciliation in progress")
	return patcher.Patch(ctx, obj, fieldOwner)
}
