package controller

import (
	"context"
	"errors"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/patch"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"
)

// ControllerName is the field manager, event source and metrics name of the controller.
const ControllerName = "resourceset-controller"

// ownedConditions are the conditions the reconcilers of this controller write.
var ownedConditions = []string{meta.ReadyCondition, meta.ReconcilingCondition, meta.StalledCondition, gates.BlockedCondition}

// statusObject is what finalizeStatus needs of a ResourceSet or a ResourceSetInputProvider.
type statusObject interface {
	client.Object
	conditions.Setter
}

// finalizeStatus turns the outcome of a reconcile into kstatus conditions and patches the
// status once. The steps set Ready (True on success; False with the reason of a failure or a
// wait); here:
//   - a terminal error (reconcile.TerminalError) adds Stalled with Ready's reason and message;
//   - another error leaves Reconciling=True, ProgressingWithRetry: the retry is coming;
//   - otherwise the reconcile is over: Reconciling and Stalled go.
//
// observedGeneration is written when the spec was handled: on success and on a terminal error.
func finalizeStatus(ctx context.Context, patcher *patch.SerialPatcher, obj statusObject, observedGeneration *int64,
	err error, metrics *runtimectrl.Metrics) error {
	if obj.GetDeletionTimestamp().IsZero() {
		ready := conditions.Get(obj, meta.ReadyCondition)
		if err != nil && (ready == nil || ready.Status != metav1.ConditionFalse) {
			conditions.MarkFalse(obj, meta.ReadyCondition, meta.ReconciliationFailedReason, "%s", userMessage(err))
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
	if perr := patcher.Patch(ctx, obj, patch.WithOwnedConditions{Conditions: ownedConditions},
		patch.WithFieldOwner(ControllerName)); perr != nil {
		if !obj.GetDeletionTimestamp().IsZero() && client.IgnoreNotFound(perr) == nil {
			return err // deleted while finishing: nothing left to patch
		}
		return errors.Join(err, perr)
	}
	return err
}

// userMessage is an error's text without controller-runtime's "terminal error: " prefix.
func userMessage(err error) string {
	if errors.Is(err, reconcile.TerminalError(nil)) {
		if inner := errors.Unwrap(err); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}
