package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
)

// InputFailedReason is the Warning event of an input left out by spec.isolateInputFailures.
const InputFailedReason = "InputFailed"

// recordFailedInputs keeps status.failedInputs (spec.isolateInputFailures), warns once per new
// failure, and says whether the build is partial.
func (r *ResourceSetReconciler) recordFailedInputs(obj *rsv1.ResourceSet, failed []builder.FailedInput) bool {
	before := obj.Status.FailedInputs
	obj.Status.FailedInputs = nil
	for _, f := range failed {
		entry := rsv1.FailedInput{ID: f.ID, Message: f.Message}
		obj.Status.FailedInputs = append(obj.Status.FailedInputs, entry)
		if !slices.Contains(before, entry) {
			r.EventRecorder.Event(obj, corev1.EventTypeWarning, InputFailedReason, "input left out, its objects kept: "+f.Message)
		}
	}
	return len(failed) > 0
}
