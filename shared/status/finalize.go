// Package status finishes a reconcile the way every Sluice controller does: the outcome of the
// steps becomes kstatus conditions (Ready, Reconciling, Stalled) and the status is patched once.
package status

import (
	"context"
	"errors"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
)

// Object is what Finalize needs of a reconciled object.
type Object interface {
	client.Object
	conditions.Setter
}

// Finalize turns the outcome of a reconcile into kstatus conditions and writes the status in one
// request (Patcher), as the field owner of the controller. The steps set Ready (True on
// success; False with the reason of a failure or a wait); here:
//   - a terminal error (reconcile.TerminalError) adds Stalled with Ready's reason and message;
//   - another error leaves Reconciling=True, ProgressingWithRetry: the retry is coming;
//   - otherwise the reconcile is over: Reconciling and Stalled go.
//
// observedGeneration is written when the spec was handled: on success and on a terminal error.
func Finalize(ctx context.Context, patcher *Patcher, obj Object, observedGeneration *int64,
	err error, metrics *conditiongauge.Gauges, fieldOwner string) error {
	if obj.GetDeletionTimestamp().IsZero() {
		ready := conditions.Get(obj, meta.ReadyCondition)
		if err != nil && (ready == nil || ready.Status != metav1.ConditionFalse) {
			conditions.MarkFalse(obj, meta.ReadyCondition, meta.ReconciliationFailedReason, "%s", UserMessage(err))
			ready = conditions.Get(obj, meta.ReadyCondition)
		}
		switch {
		case errors.Is(err, reconcile.TerminalError(nil)):
			conditions.MarkStalled(obj, ready.Reason, "%s", ready.Message)
			conditions.Delete(obj, meta.ReconcilingCondition)
		case err != nil:
			conditions.MarkReconciling(obj, meta.ProgressingWithRetryReason, "%s", ready.Message)
			conditions.Delete(obj, meta.StalledCondition)
		default:
			conditions.Delete(obj, meta.ReconcilingCondition)
			conditions.Delete(obj, meta.StalledCondition)
		}
		if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
			*observedGeneration = obj.GetGeneration()
		}
	}
	if metrics != nil {
		metrics.RecordReadiness(ctx, obj)
		metrics.RecordReconciling(ctx, obj)
		metrics.RecordStalled(ctx, obj)
	}
	// The error goes on to controller-runtime, which logs it: redacted.
	if perr := patcher.Patch(ctx, obj, fieldOwner); perr != nil {
		if !obj.GetDeletionTimestamp().IsZero() && Gone(perr) {
			return redacted(err) // deleted while finishing: nothing left to patch
		}
		return redacted(errors.Join(err, perr))
	}
	return redacted(err)
}

// UserMessage is an error's text without controller-runtime's "terminal error: " prefix, with
// the credentials of URLs redacted (Redact).
func UserMessage(err error) string {
	var r *redactedError
	if errors.As(err, &r) {
		err = r.err
	}
	if errors.Is(err, reconcile.TerminalError(nil)) {
		if inner := errors.Unwrap(err); inner != nil {
			return Redact(inner.Error())
		}
	}
	return Redact(err.Error())
}
