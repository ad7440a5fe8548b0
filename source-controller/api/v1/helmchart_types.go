package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// HelmChartKind is the kind of HelmChart objects.
const HelmChartKind = "HelmChart"

// Reconcile strategies of a HelmChart.
const (
	// ReconcileStrategyChartVersion builds a new artifact when the chart version changes.
	ReconcileStrategyChartVersion = "ChartVersion"
	// ReconcileStrategyRevision builds a new artifact when the source revision changes.
	ReconcileStrategyRevision = "Revision"
)

// Reasons of a HelmChart (docs/helmchart.md).
const (
	ChartPullSucceededReason    = "ChartPullSucceeded"
	ChartPackageSucceededReason = "ChartPackageSucceeded"
	ChartPullFailedReason       = "ChartPullFailed"
	ChartPackageFailedReason    = "ChartPackageFailed"
	InvalidChartReferenceReason = "InvalidChartReference"
	NewChartReason              = "NewChart"
	// BuildFailedCondition: the chart could not be built.
	BuildFailedCondition = "BuildFailed"
	// SourceUnavailableReason: the source does not exist or has no artifact yet.
	SourceUnavailableReason = "SourceUnavailable"
)

// LocalHelmChartSourceReference names the source of a chart in the same namespace.
type LocalHelmChartSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the source: HelmRepository, GitRepository or Bucket.
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket
	// +required
	Kind string `json:"kind"`
	// Name of the source.
	// +required
	Name string `json:"name"`
}

// OCIRepositoryVerification configures the verification of signatures. Keyless verification
// needs the public Sigstore services (Fulcio, Rekor), so the public keys are required.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef)",message="keyless verification is not supported (it needs the public Sigstore services): set verify.secretRef to a Secret holding the cosign public keys (*.pub)"
type OCIRepositoryVerification struct {
	// Provider of the signatures: cosign.
	// +kubebuilder:validation:Enum=cosign
	// +kubebuilder:default:=cosign
	Provider string `json:"provider"`
	// SecretRef names a Secret with the public keys (`*.pub`) the signatures are checked with.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
	// MatchOIDCIdentity lists the OIDC issuers and subjects a keyless signature may come from;
	// keyless verification is refused (see above), so it is kept for compatibility only.
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
	// TrustedRootSecretRef names a Secret with the Sigstore trusted root of keyless
	// verification, refused likewise.
	// +optional
	TrustedRootSecretRef *meta.LocalObjectReference `json:"trustedRootSecretRef,omitempty"`
}

// OIDCIdentityMatch is an OIDC issuer and subject, both regular expressions, a keyless
// signature must match.
type OIDCIdentityMatch struct {
	// Issuer matches the OIDC issuer.
	// +required
	Issuer string `json:"issuer"`
	// Subject matches the identity of the signer.
	// +required
	Subject string `json:"subject"`
}

// HelmChartSpec says which chart to build, from which source, and how.
type HelmChartSpec struct {
	// Chart is the name or path of the chart: a name in a HelmRepository, a path in a GitRepository.
	// +required
	Chart string `json:"chart"`

	// Version is a semver range of the chart (default `*`); ignored for GitRepository sources.
	// +kubebuilder:default:=*
	// +optional
	Version string `json:"version,omitempty"`

	// SourceRef is the source of the chart.
	// +required
	SourceRef LocalHelmChartSourceReference `json:"sourceRef"`

	// Interval at which the chart is checked for a new version.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// ReconcileStrategy: ChartVersion (default) rebuilds when the chart version changes,
	// Revision when the source revision changes.
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	// +kubebuilder:default:=ChartVersion
	// +optional
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles are merged in order (last wins) into the chart's values, and the chart is
	// repackaged with them.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips values files that do not exist instead of failing.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`

	// Suspend stops the reconciliation of this source.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Verify configures the verification of the chart's signature (OCI charts only).
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// Gates hold the chart on its last artifact while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
}

// HelmChartStatus is the observed state of a HelmChart (docs/helmchart.md).
type HelmChartStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedSourceArtifactRevision is the revision of the source artifact the chart was built from.
	// +optional
	ObservedSourceArtifactRevision string `json:"observedSourceArtifactRevision,omitempty"`
	// ObservedChartName is the name of the last chart built.
	// +optional
	ObservedChartName string `json:"observedChartName,omitempty"`
	// ObservedValuesFiles are the values files merged into the last chart built.
	// +optional
	ObservedValuesFiles []string `json:"observedValuesFiles,omitempty"`
	// Conditions: Ready, Reconciling, Stalled, FetchFailed, BuildFailed, ArtifactOutdated,
	// ArtifactInStorage, SourceVerified, Blocked.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// URL is the stable URL of the chart: .../latest.tar.gz.
	// +optional
	URL string `json:"url,omitempty"`
	// Artifact is the chart of the last successful reconciliation.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmChart builds a Helm chart artifact from a HelmRepository or a GitRepository.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=hc
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Source Kind",type=string,JSONPath=`.spec.sourceRef.kind`
// +kubebuilder:printcolumn:name="Source Name",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmChartSpec   `json:"spec,omitempty"`
	Status HelmChartStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *HelmChart) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *HelmChart) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *HelmChart) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *HelmChart) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *HelmChart) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetArtifact returns the stored artifact.
func (in *HelmChart) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// SetArtifact sets the stored artifact.
func (in *HelmChart) SetArtifact(a *meta.Artifact) { in.Status.Artifact = a }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *HelmChart) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// HelmChartList is a list of HelmCharts.
// +kubebuilder:object:root=true
type HelmChartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmChart `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HelmChart{}, &HelmChartList{})
}
