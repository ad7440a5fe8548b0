package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// GitRepositoryKind is the kind of GitRepository objects.
const GitRepositoryKind = "GitRepository"

// GitRepositorySpec says which repository and reference to fetch and how often.
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccountName) || (has(self.provider) && (self.provider == 'azure' || self.provider == 'aws'))",message="serviceAccountName can only be set when provider is 'azure' or 'aws'"
type GitRepositorySpec struct {
	// URL of the repository: http, https or ssh.
	// +kubebuilder:validation:Pattern="^(http|https|ssh)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace with the credentials: for https `username` and
	// `password`, or `bearerToken`, and optionally `ca.crt`; for ssh `identity` (a private key),
	// `known_hosts` (required) and optionally `password` for the key.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Provider of the credentials: `generic` (default, spec.secretRef), or `aws`, `azure` and
	// `github`, which need a cloud or app identity this controller does not obtain: such a
	// GitRepository is Stalled with a message saying so.
	// +kubebuilder:validation:Enum=generic;aws;azure;github
	// +optional
	Provider string `json:"provider,omitempty"`

	// ServiceAccountName is the ServiceAccount whose cloud identity `aws` and `azure` providers
	// would use (see provider).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Interval at which the repository is checked for new revisions.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of Git operations (default 60s).
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Reference to check out (default: branch master).
	// +optional
	Reference *GitRepositoryRef `json:"ref,omitempty"`

	// Verification checks the OpenPGP or SSH signature of the commit and/or the tag against the
	// public keys of a Secret; an unverified revision is not stored.
	// +optional
	Verification *GitRepositoryVerification `json:"verify,omitempty"`

	// ProxySecretRef names a Secret in the same namespace with the HTTP(S) proxy to reach the
	// repository through: `address`, and optionally `username` and `password`.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Ignore overrides the default exclusions with .gitignore-style patterns, relative to the root.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend stops the reconciliation of this source.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// RecurseSubmodules checks the repository's submodules out too, with the same credentials.
	// +optional
	RecurseSubmodules bool `json:"recurseSubmodules,omitempty"`

	// Include copies the artifacts of other GitRepositories of the namespace into this one's.
	// +optional
	Include []GitRepositoryInclude `json:"include,omitempty"`

	// SparseCheckout limits the artifact to these directories of the repository.
	// +optional
	SparseCheckout []string `json:"sparseCheckout,omitempty"`

	// Gates hold the source on its last artifact while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
}

// GitRepositoryRef is the Git reference to check out; the first set of commit (with or
// without branch), name, semver, tag and branch wins.
type GitRepositoryRef struct {
	// Branch to check out (default master).
	// +optional
	Branch string `json:"branch,omitempty"`
	// Tag to check out.
	// +optional
	Tag string `json:"tag,omitempty"`
	// SemVer range of tags; the highest matching tag is checked out.
	// +optional
	SemVer string `json:"semver,omitempty"`
	// Name is a full reference name such as refs/heads/main or refs/pull/42/head.
	// +optional
	Name string `json:"name,omitempty"`
	// Commit SHA to check out; with Branch, it must be on that branch.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// GitRepositoryStatus is the observed state of a GitRepository.
type GitRepositoryStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed, ArtifactOutdated, ArtifactInStorage,
	// StorageOperationFailed, Blocked.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the stored artifact of the last successful reconciliation.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// IncludedArtifacts are the artifacts of spec.include the artifact was built with, in order.
	// +optional
	IncludedArtifacts []*meta.Artifact `json:"includedArtifacts,omitempty"`

	// ObservedIgnore is the spec.ignore the artifact was built with.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// ObservedRecurseSubmodules is the spec.recurseSubmodules the artifact was built with.
	// +optional
	ObservedRecurseSubmodules bool `json:"observedRecurseSubmodules,omitempty"`

	// ObservedInclude is the spec.include the artifact was built with.
	// +optional
	ObservedInclude []GitRepositoryInclude `json:"observedInclude,omitempty"`

	// ObservedSparseCheckout is the spec.sparseCheckout the artifact was built with.
	// +optional
	ObservedSparseCheckout []string `json:"observedSparseCheckout,omitempty"`

	// SourceVerificationMode is what the last verification checked: HEAD, Tag or TagAndHEAD.
	// +optional
	SourceVerificationMode *GitVerificationMode `json:"sourceVerificationMode,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// GitRepository fetches a Git repository and serves its content as an artifact.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=gitrepo
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitRepositorySpec   `json:"spec,omitempty"`
	Status GitRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *GitRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *GitRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *GitRepository) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *GitRepository) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *GitRepository) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetArtifact returns the stored artifact.
func (in *GitRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// SetArtifact sets the stored artifact.
func (in *GitRepository) SetArtifact(a *meta.Artifact) { in.Status.Artifact = a }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *GitRepository) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// GitRepositoryList is a list of GitRepositories.
// +kubebuilder:object:root=true
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitRepository{}, &GitRepositoryList{})
}
