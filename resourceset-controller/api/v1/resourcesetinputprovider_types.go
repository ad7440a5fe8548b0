package v1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// ResourceSetInputProviderKind is the kind of ResourceSetInputProvider objects.
const ResourceSetInputProviderKind = "ResourceSetInputProvider"

// Types of input providers.
const (
	// InputProviderStatic exports spec.defaultValues as its one input.
	InputProviderStatic = "Static"
	// InputProviderOCIArtifactTag exports one input per tag of an OCI repository.
	InputProviderOCIArtifactTag = "OCIArtifactTag"
	// InputProviderExternalService exports the inputs returned by an HTTP service.
	InputProviderExternalService = "ExternalService"
	// InputProviderExternalArtifact exports one input per ExternalArtifact that spec.selectors
	// select.
	InputProviderExternalArtifact = "ExternalArtifact"

	// The forge types export one input per branch, tag, open pull or merge request, or
	// environment of a repository on Gitea, GitHub or GitLab.
	InputProviderGiteaBranch        = "GiteaBranch"
	InputProviderGiteaTag           = "GiteaTag"
	InputProviderGiteaPullRequest   = "GiteaPullRequest"
	InputProviderGitHubBranch       = "GitHubBranch"
	InputProviderGitHubTag          = "GitHubTag"
	InputProviderGitHubPullRequest  = "GitHubPullRequest"
	InputProviderGitLabBranch       = "GitLabBranch"
	InputProviderGitLabTag          = "GitLabTag"
	InputProviderGitLabMergeRequest = "GitLabMergeRequest"
	InputProviderGitLabEnvironment  = "GitLabEnvironment"

	// InputProviderGitBranch and InputProviderGitTag read the branches or tags of any Git server
	// by ls-remote, with a GitRepository's credentials: a Sluice addition.
	InputProviderGitBranch = "GitBranch"
	InputProviderGitTag    = "GitTag"
)

// ForgeProviders are the types that list a forge's repository through its API.
var ForgeProviders = []string{
	InputProviderGiteaBranch, InputProviderGiteaTag, InputProviderGiteaPullRequest,
	InputProviderGitHubBranch, InputProviderGitHubTag, InputProviderGitHubPullRequest,
	InputProviderGitLabBranch, InputProviderGitLabTag, InputProviderGitLabMergeRequest, InputProviderGitLabEnvironment,
}

// CloudIdentityProviders are flux-operator's provider types that authenticate with a cloud
// provider's workload identity (Azure, AWS, Google Cloud). The schema accepts them, so that a
// flux-operator manifest applies unchanged, and the controller refuses them with a message that
// says so: Sluice has no cloud identity.
var CloudIdentityProviders = []string{
	"AzureDevOpsBranch", "AzureDevOpsTag", "AzureDevOpsPullRequest",
	"AWSCodeCommitBranch", "AWSCodeCommitTag", "AWSCodeCommitPullRequest",
	"ACRArtifactTag", "ECRArtifactTag", "GARArtifactTag",
}

// ResourceSetInputProviderSpec says where inputs come from and how they are filtered.
// +kubebuilder:validation:XValidation:rule="self.type != 'Static' || !has(self.url) || size(self.url) == 0",message="spec.url must be empty for the Static type"
// +kubebuilder:validation:XValidation:rule="self.type != 'OCIArtifactTag' || (has(self.url) && self.url.startsWith('oci://'))",message="spec.url must start with oci:// for the OCIArtifactTag type"
// +kubebuilder:validation:XValidation:rule="self.type != 'ExternalService' || (has(self.url) && (self.url.startsWith('https://') || (self.url.startsWith('http://') && has(self.insecure) && self.insecure)))",message="spec.url must start with https:// for the ExternalService type (http:// needs spec.insecure: true)"
// +kubebuilder:validation:XValidation:rule="!(self.type.startsWith('Gitea') || self.type.startsWith('GitHub') || self.type.startsWith('GitLab')) || (has(self.url) && (self.url.startsWith('https://') || self.url.startsWith('http://')))",message="spec.url must be the http:// or https:// address of the repository for the Gitea, GitHub and GitLab types"
// +kubebuilder:validation:XValidation:rule="!(self.type == 'GitBranch' || self.type == 'GitTag') || (has(self.url) && (self.url.startsWith('https://') || self.url.startsWith('http://') || self.url.startsWith('ssh://')))",message="spec.url must be an http://, https:// or ssh:// Git URL for the GitBranch and GitTag types"
// +kubebuilder:validation:XValidation:rule="self.type != 'ExternalArtifact' || !has(self.url) || size(self.url) == 0",message="spec.url must be empty for the ExternalArtifact type"
// +kubebuilder:validation:XValidation:rule="self.type != 'ExternalArtifact' || (has(self.selectors) && size(self.selectors) > 0)",message="spec.selectors must be set for the ExternalArtifact type"
// +kubebuilder:validation:XValidation:rule="self.type == 'ExternalArtifact' || !has(self.selectors)",message="spec.selectors may only be set for the ExternalArtifact type"
// +kubebuilder:validation:XValidation:rule="!has(self.skip) || self.type.endsWith('PullRequest') || self.type.endsWith('MergeRequest')",message="spec.skip may only be set for the pull and merge request types"
type ResourceSetInputProviderSpec struct {
	// Type of the provider: Static, OCIArtifactTag, ExternalService, ExternalArtifact, a forge
	// type (ForgeProviders), GitBranch or GitTag. flux-operator's types that need cloud identity
	// (CloudIdentityProviders) are accepted here and refused by the controller.
	// +kubebuilder:validation:Enum=Static;OCIArtifactTag;ExternalService;ExternalArtifact;GiteaBranch;GiteaTag;GiteaPullRequest;GitHubBranch;GitHubTag;GitHubPullRequest;GitLabBranch;GitLabTag;GitLabMergeRequest;GitLabEnvironment;GitBranch;GitTag;AzureDevOpsBranch;AzureDevOpsTag;AzureDevOpsPullRequest;AWSCodeCommitBranch;AWSCodeCommitTag;AWSCodeCommitPullRequest;ACRArtifactTag;ECRArtifactTag;GARArtifactTag
	// +required
	Type string `json:"type"`

	// URL of the source: an `oci://` repository for OCIArtifactTag, an `https://` address for
	// ExternalService; empty for Static. An ExternalService may not reach loopback, link-local or
	// unspecified addresses, nor the cluster's Service range, unless the controller's
	// --external-service-allowed-cidrs allows them.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`

	// Insecure allows plain HTTP: an `http://` URL for ExternalService, a registry without TLS for
	// OCIArtifactTag.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// ServiceAccountName is, in flux-operator, the account whose cloud workload identity the
	// cloud types (CloudIdentityProviders) authenticate with. Sluice has no cloud identity and
	// refuses those types; with the other types it has no effect, as in flux-operator.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// SecretRef names a Secret in the same namespace with the credentials: a
	// kubernetes.io/dockerconfigjson Secret for OCIArtifactTag; `username` and `password`, or
	// `token` (bearer), for ExternalService.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace whose `ca.crt` is the CA to trust.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Filter selects and limits the exported inputs.
	// +optional
	Filter *ResourceSetInputFilter `json:"filter,omitempty"`

	// Skip keeps the exported input of a pull or merge request as it was while the request has
	// one of these labels (or, for a label written `!label`, lacks it): its sha freezes, and a
	// new request with such a label is not exported.
	// +optional
	Skip *ResourceSetInputSkip `json:"skip,omitempty"`

	// Selectors choose the ExternalArtifacts an ExternalArtifact provider exports: required for
	// that type, refused for the others.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Selectors []ExternalArtifactSelector `json:"selectors,omitempty"`

	// Schedule limits when the provider fetches: only while one of these windows is open (or,
	// for a window of 0s, at the times its cron expression names). A Sluice reading of
	// flux-operator's field, with the gating-controller's cron semantics (shared/schedule).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Schedule []Schedule `json:"schedule,omitempty"`

	// Gates hold new inputs back while they are closed (a change freeze): the provider keeps
	// exporting what it exported last, and says what waits. A Sluice addition.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`

	// DefaultValues is the one input of a Static provider; for the other types, values every
	// exported input starts from (its own values win).
	// +optional
	DefaultValues ResourceSetInput `json:"defaultValues,omitempty"`

	// Timeout of the requests to the source (default: the reconcileTimeout annotation, 5m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// ResourceSetInputFilter selects and limits the exported inputs.
type ResourceSetInputFilter struct {
	// SemVer range the tags must match; the inputs are then sorted highest version first.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// IncludeTag is a regular expression the tags must match.
	// +optional
	IncludeTag string `json:"includeTag,omitempty"`

	// ExcludeTag is a regular expression of tags to leave out.
	// +optional
	ExcludeTag string `json:"excludeTag,omitempty"`

	// IncludeBranch is a regular expression the branches must match (of a pull or merge request,
	// its source branch).
	// +optional
	IncludeBranch string `json:"includeBranch,omitempty"`

	// ExcludeBranch is a regular expression of branches to leave out.
	// +optional
	ExcludeBranch string `json:"excludeBranch,omitempty"`

	// IncludeEnvironment is a regular expression the environments of a GitLabEnvironment
	// provider must match.
	// +optional
	IncludeEnvironment string `json:"includeEnvironment,omitempty"`

	// ExcludeEnvironment is a regular expression of environments to leave out.
	// +optional
	ExcludeEnvironment string `json:"excludeEnvironment,omitempty"`

	// Labels a pull or merge request must all have to be exported.
	// +optional
	Labels []string `json:"labels,omitempty"`

	// Limit is the maximum number of exported inputs (default 100).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=100
	// +optional
	Limit int `json:"limit,omitempty"`
}

// ResourceSetInputSkip says which pull or merge requests keep their last exported input.
type ResourceSetInputSkip struct {
	// Labels that freeze a request's input; `!label` freezes a request without the label.
	// +optional
	Labels []string `json:"labels,omitempty"`
}

// ExternalArtifactSelector chooses ExternalArtifacts by name or by labels.
// +kubebuilder:validation:XValidation:rule="!has(self.name) || (!has(self.matchLabels) && !has(self.matchExpressions))",message="name is mutually exclusive with matchLabels and matchExpressions"
type ExternalArtifactSelector struct {
	metav1.LabelSelector `json:",inline"`

	// Name chooses one ExternalArtifact by its name.
	// +optional
	Name string `json:"name,omitempty"`

	// Namespace the ExternalArtifacts are read from: the provider's own when empty, every
	// namespace for "*". Another namespace is read as the provider's account
	// (serviceAccountName, else the controller's default account).
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ResourceSetInputProviderStatus is the observed state of a ResourceSetInputProvider.
type ResourceSetInputProviderStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ExportedInputs are the inputs the ResourceSets that reference this provider receive.
	// +optional
	ExportedInputs []ResourceSetInput `json:"exportedInputs,omitempty"`

	// LastExportedRevision is the digest of the exported inputs.
	// +optional
	LastExportedRevision string `json:"lastExportedRevision,omitempty"`

	// NextSchedule is the next time the provider fetches because of its schedule, when that is
	// what its next fetch waits for; absent inside a window.
	// +optional
	NextSchedule *NextSchedule `json:"nextSchedule,omitempty"`

	// Gates says whether the provider's gates hold it, and the revision of the inputs that
	// waits behind them; absent when it has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
	meta.ForceRequestStatus     `json:",inline"`
}

// Schedule is a window during which a provider may fetch.
type Schedule struct {
	// Cron is a standard 5-field cron expression: when the window opens.
	// +required
	Cron string `json:"cron"`

	// TimeZone is the IANA time zone of Cron (default UTC).
	// +kubebuilder:default:="UTC"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// Window is how long the window stays open; 0s (the default) fetches at the times Cron
	// names. A window other than 0s must be at least twice the provider's timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:default:="0s"
	// +optional
	Window metav1.Duration `json:"window"`
}

// NextSchedule is the schedule the next fetch waits for, and when.
type NextSchedule struct {
	Schedule `json:",inline"`

	// When the schedule lets the provider fetch next.
	// +required
	When metav1.Time `json:"when"`
}

// ResourceSetInputProvider exports inputs for ResourceSets from a static list, the tags of an OCI
// repository or an external service.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=rsip
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type ResourceSetInputProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ResourceSetInputProviderSpec   `json:"spec"`
	Status ResourceSetInputProviderStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ResourceSetInputProvider) GetConditions() []metav1.Condition { return in.Status.Conditions }

// GetGates implements gatesapi.Gated.
func (in *ResourceSetInputProvider) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the provider's gates.
func (in *ResourceSetInputProvider) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the provider's gates.
func (in *ResourceSetInputProvider) SetGatesStatus(s *gatesapi.GatesStatus) { in.Status.Gates = s }

// SetConditions sets the status conditions.
func (in *ResourceSetInputProvider) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *ResourceSetInputProvider) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// IsDisabled reports whether the reconcile annotation pauses the provider.
func (in *ResourceSetInputProvider) IsDisabled() bool { return isDisabled(in.GetAnnotations()) }

// GetInterval is the reconcileEvery annotation, DefaultInputProviderInterval (10m) when unset or
// invalid.
func (in *ResourceSetInputProvider) GetInterval() time.Duration {
	return durationAnnotation(in.GetAnnotations(), ReconcileEveryAnnotation, DefaultInputProviderInterval)
}

// GetTimeout is spec.timeout, else the reconcileTimeout annotation, else DefaultTimeout (5m).
func (in *ResourceSetInputProvider) GetTimeout() time.Duration {
	if in.Spec.Timeout != nil && in.Spec.Timeout.Duration > 0 {
		return in.Spec.Timeout.Duration
	}
	return durationAnnotation(in.GetAnnotations(), ReconcileTimeoutAnnotation, DefaultTimeout)
}

// GetLimit is spec.filter.limit, 100 when unset.
func (in *ResourceSetInputProvider) GetLimit() int {
	if in.Spec.Filter == nil || in.Spec.Filter.Limit <= 0 {
		return DefaultInputLimit
	}
	return in.Spec.Filter.Limit
}

// DefaultInputLimit is the default of spec.filter.limit.
const DefaultInputLimit = 100

// ResourceSetInputProviderList is a list of ResourceSetInputProviders.
// +kubebuilder:object:root=true
type ResourceSetInputProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceSetInputProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceSetInputProvider{}, &ResourceSetInputProviderList{})
}
