package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1 "k8s.io/api/core/v1"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/apply"
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

// isolateRefused is the Plan.Isolate of a ResourceSet with spec.isolateInputFailures: when the
// API server refuses objects (their dry-run or apply failed, the error naming them), the inputs
// they came from are left out, with the error as why, and the others are rendered again.
func (r *ResourceSetReconciler) isolateRefused(ctx context.Context, obj *rsv1.ResourceSet, groups []inputs.Group,
	rendered builder.Rendered) func(error) ([]*unstructured.Unstructured, string, bool) {
	return func(err error) ([]*unstructured.Unstructured, string, bool) {
		msg := err.Error()
		failed := append([]builder.FailedInput(nil), rendered.Failed...)
		left := map[int]bool{}
		for _, f := range failed {
			left[f.Index] = true
		}
		found := false
		for i, o := range rendered.Objects {
			if i >= len(rendered.InputOf) || left[rendered.InputOf[i]] || !strings.Contains(msg, ssautil.FmtUnstructured(o)) {
				continue
			}
			index := rendered.InputOf[i]
			left[index] = true
			failed = append(failed, builder.FailedInput{Index: index, Message: fmt.Sprintf("inputs[%d]: %s", index, msg)})
			found = true
		}
		if !found {
			return nil, "", false
		}
		next, err := builder.RenderResourceSetLeavingOut(ctx, obj, groups, failed)
		if err != nil {
			return nil, "", false
		}
		revision, err := apply.Revision(next.Objects)
		if err != nil {
			return nil, "", false
		}
		rendered = next
		r.recordFailedInputs(obj, next.Failed)
		return next.Objects, revision, true
	}
}
