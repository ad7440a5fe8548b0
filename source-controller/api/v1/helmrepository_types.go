package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// HelmRepositoryKind is the kind of HelmRepository objects.
const HelmRepositoryKind = "HelmRepository"

const (
	// HelmRepositoryTypeDefault is a Helm HTTP repository with an index.yaml.
	HelmRepositoryTypeDefault = "default"
	// HelmRepositoryTypeOCI is a Helm repository in an OCI registry.
	HelmRepositoryTypeOCI = "oci"
)

// AccessFrom lists the namespaces allowed to use an object, by label selectors.
type AccessFrom struct {
	// NamespaceSelectors: a namespace matching any of them is allowed.
	// +required
	NamespaceSelectors []NamespaceSelector `json:"namespaceSelectors"`
}

// NamespaceSelector selects namespaces by their labels.
type NamespaceSelector struct {
	// MatchLabels are the labels a namespace must have, all of them.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// HelmRepositorySpec says where a Helm repository is and how to reach it.
// +kubebuilder:validation:XValidation:rule="self.type != 'oci' || self.url.startsWith('oci://')",message="an oci HelmRepository needs an oci:// URL"
// +kubebuilder:validation:XValidation:rule="self.type == 'oci' || !self.url.startsWith('oci://')",message="an oci:// URL needs type: oci"
type HelmRepositorySpec struct {
	// URL of the repository: http(s) for the default type, oci:// for type oci.
	// +kubebuilder:validation:Pattern="^(http|https|oci)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret with `username` and `password` for basic access.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with `ca.crt`, and `tls.crt` with `tls.key` for client certificates.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// PassCredentials sends the credentials to chart URLs on other hosts than the index.
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`

	// Insecure allows plain HTTP to an OCI registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Interval at which the index is checked for changes.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`

	// Timeout of the index download (default 60s).
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops the reconciliation of this source.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Type of the repository: `default` (an HTTP index) or `oci`.
	// +kubebuilder:validation:Enum=default;oci
	// +kubebuilder:default=default
	// +optional
	Type string `json:"type,omitempty"`

	// AccessFrom lists the namespaces whose HelmReleases may use this repository, as Flux's
	// helm-controller reads it; the source-controller does not enforce it.
	// +optional
	AccessFrom *AccessFrom `json:"accessFrom,omitempty"`

	// Provider of the credentials of an oci repository: `generic` (default, spec.secretRef), or
	// `aws`, `azure` and `gcp`, which need a cloud identity this controller does not obtain:
	// such a HelmRepository is Stalled with a message saying so.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// Gates hold the source on its last artifact while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
}

// HelmRepositoryStatus is the observed state of a HelmRepository.
type HelmRepositoryStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed, ArtifactOutdated, ArtifactInStorage,
	// StorageOperationFailed, Blocked.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the stable URL of the stored index (latest.tar.gz style).
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the stored index of the last successful reconciliation.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmRepository fetches the index of a Helm repository.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=helmrepo
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmRepositorySpec   `json:"spec,omitempty"`
	Status HelmRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *HelmRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *HelmRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *HelmRepository) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *HelmRepository) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *HelmRepository) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetArtifact returns the stored artifact.
func (in *HelmRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// SetArtifact sets the stored artifact.
func (in *HelmRepository) SetArtifact(a *meta.Artifact) { in.Status.Artifact = a }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *HelmRepository) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// HelmRepositoryList is a list of HelmRepositories.
// +kubebuilder:object:root=true
type HelmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HelmRepository{}, &HelmRepositoryList{})
}
