package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// OCIRepositoryKind is the kind of OCIRepository objects.
const OCIRepositoryKind = "OCIRepository"

// Layer operations of an OCIRepository.
const (
	// OCILayerExtract extracts the layer (a tar.gz) and archives its content as the artifact.
	OCILayerExtract = "extract"
	// OCILayerCopy stores the layer as is.
	OCILayerCopy = "copy"
)

// OCIRepositoryRef is the artifact to pull; digest wins over semver, semver over tag.
type OCIRepositoryRef struct {
	// Digest of the manifest, `sha256:...`.
	// +optional
	Digest string `json:"digest,omitempty"`
	// SemVer range of tags; the highest matching tag is pulled.
	// +optional
	SemVer string `json:"semver,omitempty"`
	// Tag to pull (default latest).
	// +optional
	Tag string `json:"tag,omitempty"`
	// SemverFilter keeps, of the tags in the SemVer range, those matching this regular
	// expression, e.g. `.*-rc.*` for release candidates.
	// +optional
	SemverFilter string `json:"semverFilter,omitempty"`
}

// OCILayerSelector chooses the layer of the artifact.
type OCILayerSelector struct {
	// MediaType of the layer; the first layer when empty.
	// +optional
	MediaType string `json:"mediaType,omitempty"`
	// Operation: extract (default) or copy.
	// +kubebuilder:validation:Enum=extract;copy
	// +optional
	Operation string `json:"operation,omitempty"`
}

// OCIRepositorySpec says which OCI artifact to pull and how often.
type OCIRepositorySpec struct {
	// URL of the repository, `oci://host/path`.
	// +kubebuilder:validation:Pattern="^oci://.*$"
	// +required
	URL string `json:"url"`
	// Reference of the artifact (default tag latest).
	// +optional
	Reference *OCIRepositoryRef `json:"ref,omitempty"`
	// LayerSelector chooses the layer and what to do with it.
	// +optional
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`
	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson with the registry credentials.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
	// Provider of the credentials: `generic` (default, spec.secretRef), or `aws`, `azure` and
	// `gcp`, which need a cloud identity this controller does not obtain: such an OCIRepository
	// is Stalled with a message saying so.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`
	// ServiceAccountName is the ServiceAccount whose image pull secrets, or cloud identity, would
	// authenticate to the registry (see provider).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// CertSecretRef names a Secret with `ca.crt` to verify the registry's certificate, and
	// `tls.crt` with `tls.key` for a client certificate.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`
	// ProxySecretRef names a Secret with the HTTP(S) proxy to reach the registry through:
	// `address`, and optionally `username` and `password`.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`
	// Insecure allows plain HTTP.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// Verify checks the cosign signature of the artifact with the public keys of a Secret
	// before it is stored; an artifact that no key verifies is not stored.
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`
	// Ignore overrides the default exclusions with .gitignore-style patterns.
	// +optional
	Ignore *string `json:"ignore,omitempty"`
	// Interval at which the repository is checked.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`
	// Timeout of the registry operations (default 60s).
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Suspend stops the reconciliation of this source.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Gates hold the source on its last artifact while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
}

// OCIRepositoryStatus is the observed state of an OCIRepository.
type OCIRepositoryStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// URL is the stable URL of the artifact: .../latest.tar.gz.
	// +optional
	URL string `json:"url,omitempty"`
	// Artifact is the stored artifact; its metadata holds the manifest's annotations.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`
	// ObservedIgnore is the spec.ignore of the artifact.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`
	// ObservedLayerSelector is the spec.layerSelector of the artifact.
	// +optional
	ObservedLayerSelector *OCILayerSelector `json:"observedLayerSelector,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// OCIRepository pulls an OCI artifact and serves its content.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=ocirepo
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OCIRepositorySpec   `json:"spec,omitempty"`
	Status OCIRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *OCIRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *OCIRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *OCIRepository) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *OCIRepository) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *OCIRepository) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetArtifact returns the stored artifact.
func (in *OCIRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// SetArtifact sets the stored artifact.
func (in *OCIRepository) SetArtifact(a *meta.Artifact) { in.Status.Artifact = a }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *OCIRepository) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// OCIRepositoryList is a list of OCIRepositories.
// +kubebuilder:object:root=true
type OCIRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OCIRepository{}, &OCIRepositoryList{})
}
