package controller

import (
	"time"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Record keeps status.history (owner.Historian): the outcome of a reconciliation that applied,
// by the revision it applied, or of one whose build failed, by the digest of its spec.
func (r *ResourceSetReconciler) Record(obj *rsv1.ResourceSet, revision, reason string, took time.Duration, metadata map[string]string) {
	obj.Status.History.Outcome(revision, obj.Spec, reason, took, metadata)
}
