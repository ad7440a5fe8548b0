package v1

import (
	"github.com/fluxcd/pkg/apis/meta"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// Reasons of the Ready and Reconciling conditions, as in the ResourceSet documentation. They are
// Flux's own (fluxcd/pkg/apis/meta), repeated here so that callers need one import.
const (
	// ReconciliationSucceededReason: the resources were built, applied and (with spec.wait) healthy.
	ReconciliationSucceededReason = meta.ReconciliationSucceededReason
	// ReconciliationFailedReason: applying the resources failed.
	ReconciliationFailedReason = meta.ReconciliationFailedReason
	// PruneFailedReason: garbage-collecting the resources that left the set failed.
	PruneFailedReason = meta.PruneFailedReason
	// BuildFailedReason: the inputs or the templates could not be rendered into resources.
	BuildFailedReason = meta.BuildFailedReason
	// DependencyNotReadyReason: an object of spec.dependsOn is missing or not ready.
	DependencyNotReadyReason = meta.DependencyNotReadyReason
	// HealthCheckFailedReason: the applied resources did not become ready within the timeout.
	HealthCheckFailedReason = meta.HealthCheckFailedReason
	// ProgressingReason: a reconciliation is in progress (Reconciling=True).
	ProgressingReason = meta.ProgressingReason
	// ProgressingWithRetryReason: a reconciliation failed and is being retried (Reconciling=True).
	ProgressingWithRetryReason = meta.ProgressingWithRetryReason
)

// ApplySucceededReason is the event reason of an apply that created, configured or deleted objects.
const ApplySucceededReason = "ApplySucceeded"

// Finalizer lets the controller delete the applied resources before a ResourceSet goes away.
const Finalizer = "fluxcd.controlplane.io/finalizer"

// InputsGuardedReason is the reason of Ready=False while the providers of an inputsFrom
// reference export fewer inputs than its minInputs: nothing is applied or pruned.
const InputsGuardedReason = "InputsGuarded"

// PruneLimitExceededReason is the reason of Ready=False while a reconciliation would delete more
// objects than spec.maxPrune allows: nothing is applied or pruned.
const PruneLimitExceededReason = "PruneLimitExceeded"

// DeletionPendingReason is the reason of Ready=False while a deletion beyond spec.maxPrune waits
// for the approvals of spec.deletionApproval's gate: nothing is applied or pruned.
const DeletionPendingReason = gatesapi.DeletionPendingReason

// DeletionRejectedReason is the reason of Ready=False once the gate's approvers rejected the
// deletion: nothing is applied or pruned until the set changes.
const DeletionRejectedReason = gatesapi.DeletionRejectedReason
