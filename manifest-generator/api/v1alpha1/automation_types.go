package v1alpha1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Automated image releases: a ManifestGeneration with spec.automation scans the image
// repositories of its automated workloads and releases newer tags through ManifestUpdates it
// creates (docs/automation.md).

// DefaultAutomationInterval is how often the registries are scanned when spec.automation.interval
// is unset.
const DefaultAutomationInterval = 5 * time.Minute

// Labels of the ManifestUpdates an automation creates: `kubectl get manifestupdates -l
// generator.toolkit.fluxcd.io/automated=true` lists the automated releases.
const (
	AutomatedLabel  = "generator.toolkit.fluxcd.io/automated"
	GenerationLabel = "generator.toolkit.fluxcd.io/generation"
)

// AutomationFailedCondition is True while the automation cannot scan or decide: an invalid tag
// filter, a registry that cannot be read, credentials that do not work. Releases of the other
// workloads go on.
const AutomationFailedCondition = "AutomationFailed"

// Reasons of the AutomationFailed condition and of the automation's events.
const (
	// InvalidFilterReason: a workload's tag filter (fluxcd.io/tag.<container>) does not parse.
	InvalidFilterReason = "InvalidFilter"
	// ScanFailedReason: a registry could not be read.
	ScanFailedReason = "ScanFailed"
	// ReleaseCreatedReason: a ManifestUpdate was created for a newer tag.
	ReleaseCreatedReason = "ReleaseCreated"
)

// Automation turns on automated image releases for the workloads of a ManifestGeneration.
type Automation struct {
	// Interval at which the image repositories are scanned for new tags (default 5m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(s|m|h))+$"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// SecretRef names a kubernetes.io/dockerconfigjson Secret, in the same namespace, with
	// credentials for the registries; the imagePullSecrets of each workload are used as well.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret, in the same namespace, whose `ca.crt` verifies the
	// registries' TLS certificates.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows registries served over plain HTTP.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// GetInterval returns the scan interval, with its default.
func (in *Automation) GetInterval() time.Duration {
	if in == nil || in.Interval == nil || in.Interval.Duration <= 0 {
		return DefaultAutomationInterval
	}
	return in.Interval.Duration
}

// AutomationStatus is what the last scan found.
type AutomationStatus struct {
	// LastScanTime is when the registries were last scanned.
	// +optional
	LastScanTime *metav1.Time `json:"lastScanTime,omitempty"`

	// Revision is the applied revision whose workloads were scanned: a new one is scanned at
	// once.
	// +optional
	Revision string `json:"revision,omitempty"`

	// Images are the containers of the automated workloads, with the newest tag their filter
	// accepts.
	// +optional
	Images []AutomatedImage `json:"images,omitempty"`

	// LastRelease is the last ManifestUpdate the automation created.
	// +optional
	LastRelease *AutomatedRelease `json:"lastRelease,omitempty"`
}

// AutomatedImage is one container of an automated workload.
type AutomatedImage struct {
	// Workload is `<namespace>:<kind>/<name>`.
	Workload string `json:"workload"`
	// Container is the container's name.
	Container string `json:"container"`
	// Image is the image the generated manifests give the container.
	Image string `json:"image"`
	// Filter is the tag filter, e.g. `semver:~1.2` (`glob:*` when the workload sets none).
	Filter string `json:"filter"`
	// LatestTag is the newest tag of the repository that the filter accepts.
	// +optional
	LatestTag string `json:"latestTag,omitempty"`
	// Locked is true when the workload is locked (fluxcd.io/locked): it is not released.
	// +optional
	Locked bool `json:"locked,omitempty"`
}

// AutomatedRelease is a release the automation created.
type AutomatedRelease struct {
	// ManifestUpdate is the name of the ManifestUpdate that carries the release.
	ManifestUpdate string `json:"manifestUpdate"`
	// Workload is `<namespace>:<kind>/<name>`.
	Workload string `json:"workload"`
	// Container is the container's name.
	Container string `json:"container"`
	// Image is the released image.
	Image string `json:"image"`
	// Time is when the release was created.
	Time metav1.Time `json:"time"`
}
