package controller

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Record keeps status.history (owner.Historian): the outcome of a reconciliation that applied,
// by the revision it applied, or of one whose build failed, by the digest of its spec.
func (r *ResourceSetReconciler) Record(obj *rsv1.ResourceSet, revision, reason string, took time.Duration, metadata map[string]string) {
	if revision == "" {
		spec, err := json.Marshal(obj.Spec)
		if err != nil {
			return
		}
		revision = fmt.Sprintf("sha256:%x", sha256.Sum256(spec))
	}
	obj.Status.History.Record(revision, reason, time.Now(), took, metadata)
}
