package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// ManifestUpdateKind is the kind of ManifestUpdate objects.
const ManifestUpdateKind = "ManifestUpdate"

// Defaults of spec.git, also applied by the API server (the author) or by the controller (the
// message template).
const (
	// DefaultAuthorName is the author and committer name of the commits when spec.git.author.name
	// is unset.
	DefaultAuthorName = "Sluice"
	// DefaultAuthorEmail is the author and committer email of the commits when
	// spec.git.author.email is unset.
	DefaultAuthorEmail = "sluice@localhost"
	// DefaultMessageTemplate is the commit message template when spec.git.messageTemplate is
	// empty. It gives, for an image: `Update default:deployment/foo container app to nginx:1.15`,
	// and for policies: `Update policies of default:deployment/foo: automated=true, locked removed`.
	DefaultMessageTemplate = `{{ with .Spec.ContainerImage -}}
Update {{ $.Spec.Workload }} container {{ .Container }} to {{ .Image }}
{{- else with .Spec.ContainerImages -}}
Release {{ len . }} images
{{ range . }}
- {{ .Workload }} container {{ .Container }} to {{ .Image }}
{{- end }}
{{- else -}}
Update policies of {{ .Spec.Workload }}: {{ range $i, $p := .Spec.Policies }}{{ if $i }}, {{ end }}{{ $p.Name }}{{ with $p.Value }}={{ . }}{{ else }} removed{{ end }}{{ end }}
{{- end }}`
)

// Keys of the Secret of spec.git.signingKey.secretRef.
const (
	// SigningKeySSHKey holds an SSH private key (OpenSSH or PEM); commits get an SSH signature.
	SigningKeySSHKey = "identity"
	// SigningKeyGPGKey holds an ASCII-armored OpenPGP private key; commits get a GPG signature.
	SigningKeyGPGKey = "git.asc"
	// SigningKeyPassphraseKey optionally holds the passphrase of the key.
	SigningKeyPassphraseKey = "passphrase"
)

// ManifestUpdateSpec is one requested change of a workload: a new image for one of its containers,
// or new values of its policies.
// +kubebuilder:validation:XValidation:rule="[has(self.containerImage), has(self.policies), has(self.containerImages)].filter(x, x).size() == 1",message="exactly one of spec.containerImage, spec.policies or spec.containerImages must be set"
// +kubebuilder:validation:XValidation:rule="has(self.workload) != has(self.containerImages)",message="spec.workload is required with spec.containerImage or spec.policies, and not allowed with spec.containerImages, whose entries name their workloads"
type ManifestUpdateSpec struct {
	// GenerationRef names the ManifestGeneration, in the same namespace, whose target path holds
	// the workload; its source, a GitRepository, gives the repository URL and the credentials
	// (which must allow pushing).
	// +required
	GenerationRef meta.LocalObjectReference `json:"generationRef"`

	// Workload is the workload to change, `<namespace>:<kind>/<name>` as in the .flux.yaml
	// documentation, e.g. `default:deployment/foo`.
	// +kubebuilder:validation:MaxLength=381
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?:[A-Za-z][A-Za-z0-9]*/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.workload must be <namespace>:<kind>/<name>, e.g. default:deployment/foo"
	// +optional
	Workload string `json:"workload,omitempty"`

	// ContainerImage sets the image of one container of the workload (the containerImage
	// updaters, or the patch file).
	// +optional
	ContainerImage *ContainerImageUpdate `json:"containerImage,omitempty"`

	// Policies sets or removes policies of the workload (the policy updaters, or the patch file);
	// an entry without a value (or with `value: null`) removes the policy.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Policies []PolicyChange `json:"policies,omitempty"`

	// ContainerImages sets the images of several containers, of one workload or more, in one
	// commit (an automation's grouped releases): the changes are verified together, and a
	// group with one change that cannot be made pushes none.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	ContainerImages []WorkloadImageUpdate `json:"containerImages,omitempty"`

	// PullRequest proposes the change as a pull request: the commit goes to a branch of its own,
	// started afresh from the source's branch, and a pull request from it is opened (or the
	// open one updated) on the forge.
	// +optional
	PullRequest *PullRequestSpec `json:"pullRequest,omitempty"`

	// Git says where and how the change is committed.
	// +kubebuilder:default={}
	// +optional
	Git *GitCommitSpec `json:"git,omitempty"`

	// Gates hold the change, uncommitted, while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
}

// ContainerImageUpdate is a new image for one container of the workload.
type ContainerImageUpdate struct {
	// Container is the name of the container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Container string `json:"container"`

	// Image is the new image with a tag or a digest: `repo:tag`, `repo@digest` or
	// `repo:tag@digest`.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9][A-Za-z0-9._-]*(:[0-9]+)?(/[a-z0-9][a-z0-9._-]*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@[a-z0-9]+([+._-][a-z0-9]+)*:[A-Za-z0-9=_-]{32,})?|@[a-z0-9]+([+._-][a-z0-9]+)*:[A-Za-z0-9=_-]{32,})$')",message="spec.containerImage.image must be an image with a tag or a digest: repo:tag or repo@digest"
	// +required
	Image string `json:"image"`
}

// WorkloadImageUpdate is a new image for one container of a workload.
type WorkloadImageUpdate struct {
	// Workload is `<namespace>:<kind>/<name>`.
	// +kubebuilder:validation:MaxLength=381
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?:[A-Za-z][A-Za-z0-9]*/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="workload must be <namespace>:<kind>/<name>, e.g. default:deployment/foo"
	// +required
	Workload string `json:"workload"`

	ContainerImageUpdate `json:",inline"`
}

// Forges a pull request can be opened on.
const (
	PullRequestGitea  = "gitea"
	PullRequestGitHub = "github"
	PullRequestGitLab = "gitlab"
)

// PullRequestSpec says on which forge a change is proposed.
type PullRequestSpec struct {
	// Provider is the forge of the GitRepository's URL: gitea, github or gitlab. Its API is
	// reached at the host of that URL (api.github.com for github.com).
	// +kubebuilder:validation:Enum=gitea;github;gitlab
	// +required
	Provider string `json:"provider"`

	// SecretRef names a Secret, in the same namespace, whose `token` may open pull requests;
	// default: the `password` of the GitRepository's secretRef.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Branch the change is pushed to; default: one derived from the workload and the target,
	// `sluice/<generation>/<workload>-<container>` (`sluice/<generation>/release` for a
	// group), so that the next change of the same workload updates the same pull request.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`

	// Title of the pull request; default: the first line of the commit message.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Title string `json:"title,omitempty"`
}

// PullRequestStatus is the pull request a change was proposed in.
type PullRequestStatus struct {
	// Number of the pull request (merge request iid on GitLab).
	Number int64 `json:"number"`
	// URL of the pull request's page.
	// +optional
	URL string `json:"url,omitempty"`
	// Branch the change was pushed to.
	Branch string `json:"branch"`
	// Base is the branch the pull request merges into.
	Base string `json:"base"`
}

// PolicyChange sets or removes one policy of the workload.
type PolicyChange struct {
	// Name of the policy: the `<policy>` of the `fluxcd.io/<policy>` annotation, e.g. `automated`,
	// `locked` or `tag.app`.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="a policy name is the <policy> of a fluxcd.io/<policy> annotation, e.g. automated or tag.app"
	// +required
	Name string `json:"name"`

	// Value of the policy; unset, null or empty, the policy is removed (as in Flux v1, a present
	// policy has a value).
	// +optional
	Value *string `json:"value,omitempty"`
}

// GitCommitSpec says where and how a change is committed.
type GitCommitSpec struct {
	// Branch the commit is pushed to (default: the branch of the GitRepository; required when it
	// checks out a tag, a semver range or a commit).
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`

	// Author of the commits, also their committer (default Sluice <sluice@localhost>).
	// +kubebuilder:default={}
	// +optional
	Author *CommitAuthor `json:"author,omitempty"`

	// MessageTemplate is a Go text/template of the commit message, executed with the
	// ManifestUpdate object (`.Spec.Workload`, `.Spec.ContainerImage.Container`,
	// `.Spec.ContainerImage.Image`, `.Spec.Policies` with `.Name` and `.Value`, `.Name`,
	// `.Namespace`). Empty, DefaultMessageTemplate is used: `Update default:deployment/foo
	// container app to nginx:1.15`, or `Update policies of default:deployment/foo:
	// automated=true, locked removed`.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// SigningKey signs the commits.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`
}

// CommitAuthor is the name and email of the author of the commits.
type CommitAuthor struct {
	// Name of the author (default Sluice).
	// +kubebuilder:default=Sluice
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`

	// Email of the author (default sluice@localhost).
	// +kubebuilder:default="sluice@localhost"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Email string `json:"email,omitempty"`
}

// SigningKey names the key that signs the commits.
type SigningKey struct {
	// SecretRef names a Secret in the same namespace holding either an SSH private key in
	// `identity` or an ASCII-armored OpenPGP private key in `git.asc`, and optionally the
	// passphrase of the key in `passphrase`.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// ManifestUpdateStatus is the observed state of a ManifestUpdate.
type ManifestUpdateStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (reasons Committed, NoChange, VerificationFailed, PushFailed), Reconciling,
	// Stalled, Blocked.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Commit is the SHA of the commit pushed for this change.
	// +optional
	Commit string `json:"commit,omitempty"`

	// PullRequest is the pull request the change is proposed in (with spec.pullRequest).
	// +optional
	PullRequest *PullRequestStatus `json:"pullRequest,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ManifestUpdate is one requested change of a workload, written to the Git repository of a
// ManifestGeneration: the updaters of its .flux.yaml (or its patch file) make the change, which is
// verified, committed and pushed.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mupd
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Commit",type="string",JSONPath=".status.commit"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type ManifestUpdate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ManifestUpdateSpec   `json:"spec"`
	Status ManifestUpdateStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ManifestUpdate) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *ManifestUpdate) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *ManifestUpdate) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *ManifestUpdate) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *ManifestUpdate) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *ManifestUpdate) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// GetWorkload parses spec.workload.
func (in *ManifestUpdate) GetWorkload() (Workload, error) { return ParseWorkload(in.Spec.Workload) }

// GetBranch is spec.git.branch; empty means the branch of the source.
func (in *ManifestUpdate) GetBranch() string {
	if in.Spec.Git == nil {
		return ""
	}
	return in.Spec.Git.Branch
}

// GetAuthor is spec.git.author with DefaultAuthorName and DefaultAuthorEmail for what is unset.
func (in *ManifestUpdate) GetAuthor() CommitAuthor {
	author := CommitAuthor{Name: DefaultAuthorName, Email: DefaultAuthorEmail}
	if in.Spec.Git != nil && in.Spec.Git.Author != nil {
		if in.Spec.Git.Author.Name != "" {
			author.Name = in.Spec.Git.Author.Name
		}
		if in.Spec.Git.Author.Email != "" {
			author.Email = in.Spec.Git.Author.Email
		}
	}
	return author
}

// GetMessageTemplate is spec.git.messageTemplate, DefaultMessageTemplate when empty.
func (in *ManifestUpdate) GetMessageTemplate() string {
	if in.Spec.Git == nil || in.Spec.Git.MessageTemplate == "" {
		return DefaultMessageTemplate
	}
	return in.Spec.Git.MessageTemplate
}

// GetSigningKey is spec.git.signingKey, nil when commits are not signed.
func (in *ManifestUpdate) GetSigningKey() *SigningKey {
	if in.Spec.Git == nil {
		return nil
	}
	return in.Spec.Git.SigningKey
}

// ManifestUpdateList is a list of ManifestUpdates.
// +kubebuilder:object:root=true
type ManifestUpdateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManifestUpdate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ManifestUpdate{}, &ManifestUpdateList{})
}
