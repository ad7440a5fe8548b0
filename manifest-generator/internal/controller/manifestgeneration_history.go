package controller

import (
	"time"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// Record keeps status.history (owner.Historian): the outcome of a sync that applied, by the
// source revision it applied, or of one whose build failed, by the digest of its spec. A gate's
// promotion reads from it since when a revision has been applied.
func (r *ManifestGenerationReconciler) Record(obj *generatorv1.ManifestGeneration, revision, reason string, took time.Duration, metadata map[string]string) {
	obj.Status.History.Outcome(revision, obj.Spec, reason, took, metadata)
}
