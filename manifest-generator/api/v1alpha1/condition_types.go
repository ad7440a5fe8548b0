package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// Reasons of the Ready and Reconciling conditions of a ManifestGeneration, as in Flux's
// kustomize-controller. They are Flux's own (fluxcd/pkg/apis/meta), repeated here so that callers
// need one import.
const (
	// ReconciliationSucceededReason: the manifests were generated, applied and (with spec.wait)
	// healthy.
	ReconciliationSucceededReason = meta.ReconciliationSucceededReason
	// ReconciliationFailedReason: applying the manifests failed.
	ReconciliationFailedReason = meta.ReconciliationFailedReason
	// ArtifactFailedReason: the source is not ready, or its artifact could not be fetched, verified
	// or extracted.
	ArtifactFailedReason = meta.ArtifactFailedReason
	// BuildFailedReason: the .flux.yaml could not be read, a generator failed or printed invalid
	// YAML, the patch file could not be applied, or the output was empty while spec.prune is set
	// and spec.allowEmpty is not.
	BuildFailedReason = meta.BuildFailedReason
	// HealthCheckFailedReason: the applied objects did not become ready within spec.timeout.
	HealthCheckFailedReason = meta.HealthCheckFailedReason
	// PruneFailedReason: objects that left the output could not be deleted.
	PruneFailedReason = meta.PruneFailedReason
	// DependencyNotReadyReason: the source (ManifestGeneration) or the ManifestGeneration
	// (ManifestUpdate) is missing or not ready yet.
	DependencyNotReadyReason = meta.DependencyNotReadyReason
	// ProgressingReason: a reconciliation is in progress (Reconciling=True).
	ProgressingReason = meta.ProgressingReason
	// ProgressingWithRetryReason: a reconciliation failed and is being retried (Reconciling=True).
	ProgressingWithRetryReason = meta.ProgressingWithRetryReason
	// PruneLimitExceededReason: a sync would delete more objects than spec.maxPrune allows;
	// nothing is applied or pruned.
	PruneLimitExceededReason = "PruneLimitExceeded"
	// DeletionPendingReason: a deletion beyond spec.maxPrune waits for the approvals of
	// spec.deletionApproval's gate; nothing is applied or pruned.
	DeletionPendingReason = gatesapi.DeletionPendingReason
	// DeletionRejectedReason: the gate's approvers rejected the deletion; nothing is applied
	// or pruned until the set changes.
	DeletionRejectedReason = gatesapi.DeletionRejectedReason
)

// Reasons of the Ready condition of a ManifestUpdate.
const (
	// CommittedReason: the change was committed and pushed (Ready=True); status.commit is the
	// pushed commit.
	CommittedReason = "Committed"
	// NoChangeReason: the repository already has the requested change; nothing was committed
	// (Ready=True).
	NoChangeReason = "NoChange"
	// PullRequestFailedReason: the change was pushed to its branch but the pull request could
	// not be opened or updated (the forge, its token); it is tried again.
	PullRequestFailedReason = "PullRequestFailed"
	// VerificationFailedReason: the updaters (or the patch file) changed something else than the
	// requested change, or not the requested change; nothing was pushed (Ready=False).
	VerificationFailedReason = "VerificationFailed"
	// PushFailedReason: cloning, committing or pushing failed (Ready=False).
	PushFailedReason = "PushFailed"
	// MessageTemplateOverLimitReason: spec.git.messageTemplate went over one of its limits (the
	// size of the message, loop iterations, template calls, the size of a value, the time it
	// may run); nothing was committed (Ready=False, Stalled).
	MessageTemplateOverLimitReason = "MessageTemplateOverLimit"
	// InvalidMessageTemplateReason: spec.git.messageTemplate does not parse, fails, or gives an
	// empty message; nothing was committed (Ready=False, Stalled).
	InvalidMessageTemplateReason = "InvalidMessageTemplate"
)

// ApplySucceededReason is the event reason of an apply that created, configured or deleted objects.
const ApplySucceededReason = "ApplySucceeded"

// Finalizer lets the controller delete the applied objects before a ManifestGeneration goes away.
const Finalizer = "finalizers.fluxcd.io"
