package v1

import (
	"time"
)

// Annotations that configure the reconciliation of ResourceSets and ResourceSetInputProviders, and
// (reconcile, force, prune) of the objects a ResourceSet generates.
const (
	// ReconcileAnnotation is `enabled` (default) or `disabled`. On a ResourceSet or an input
	// provider, `disabled` pauses its reconciliation; on a generated object, it leaves the object
	// out of the applied set.
	ReconcileAnnotation = "fluxcd.controlplane.io/reconcile"
	// ReconcileEveryAnnotation is the interval of the drift detection and correction, a Go
	// duration (ResourceSet default 1h, ResourceSetInputProvider default 10m).
	ReconcileEveryAnnotation = "fluxcd.controlplane.io/reconcileEvery"
	// ReconcileTimeoutAnnotation is the timeout of a reconciliation including health checks, a Go
	// duration (default 5m).
	ReconcileTimeoutAnnotation = "fluxcd.controlplane.io/reconcileTimeout"
	// ForceAnnotation set to `enabled` on a generated object recreates it when an immutable field
	// changes; on the ResourceSet, it does so for every generated object.
	ForceAnnotation = "fluxcd.controlplane.io/force"
	// PruneAnnotation set to `disabled` on a generated object keeps it when it leaves the set.
	PruneAnnotation = "fluxcd.controlplane.io/prune"

	// AllowPruneAnnotation lets one reconciliation prune more than spec.maxPrune: its value is
	// the revision (sha256:…) that the PruneLimitExceeded message names, so it lets that prune
	// through and no later one. A Sluice addition.
	AllowPruneAnnotation = "resourceset.fluxcd.controlplane.io/allow-prune"

	// ChecksumFromAnnotation, on any metadata.annotations map of a generated object (a pod
	// template's, typically), lists ConfigMaps and Secrets as `Kind/namespace/name`, separated by
	// commas: the controller writes the digest of their data into the sibling ChecksumAnnotation,
	// so that a Deployment rolls when they change.
	ChecksumFromAnnotation = "fluxcd.controlplane.io/checksumFrom"
	// ChecksumAnnotation is the `sha256:<hex>` digest the controller writes for
	// ChecksumFromAnnotation.
	ChecksumAnnotation = "fluxcd.controlplane.io/checksum"

	// CopyFromAnnotation (`namespace/name`) on a generated ConfigMap or Secret fills its data with
	// that of the ConfigMap or Secret of that name, read as the ResourceSet's account.
	CopyFromAnnotation = "fluxcd.controlplane.io/copyFrom"
	// ConvertKubeConfigFromAnnotation (`namespace/name` or `namespace/name:key`) on a generated
	// ConfigMap sets its `address` and `ca.crt` from the first cluster of the kubeconfig in that
	// Secret (key `kubeconfig`, else `value`), unless the template sets them.
	ConvertKubeConfigFromAnnotation = "fluxcd.controlplane.io/convertKubeConfigFrom"
	// RecreateOnFailureAnnotation `enabled` on a generated Job deletes it when it has failed, so
	// that the apply creates it again.
	RecreateOnFailureAnnotation = "fluxcd.controlplane.io/recreateOnFailure"

	// EnabledValue is the value that turns an annotation on.
	EnabledValue = "enabled"
	// DisabledValue is the value that turns an annotation off.
	DisabledValue = "disabled"
)

// Defaults of the annotations.
const (
	// DefaultInterval is the reconcile interval of a ResourceSet.
	DefaultInterval = time.Hour
	// DefaultInputProviderInterval is the reconcile interval of a ResourceSetInputProvider.
	DefaultInputProviderInterval = 10 * time.Minute
	// DefaultTimeout is the reconcile timeout of both kinds.
	DefaultTimeout = 5 * time.Minute
)

// isDisabled reports whether the reconcile annotation is `disabled`.
func isDisabled(annotations map[string]string) bool {
	return annotations[ReconcileAnnotation] == DisabledValue
}

// durationAnnotation parses a Go duration annotation; unset, invalid or not positive, it is def.
func durationAnnotation(annotations map[string]string, key string, def time.Duration) time.Duration {
	v, ok := annotations[key]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return def
	}
	return d
}
