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
	// InvalidPolicyReason: a workload's fluxcd.io/minimum-age.<container> or
	// fluxcd.io/verify.<container> annotation does not parse.
	InvalidPolicyReason = "InvalidPolicy"
	// ScanFailedReason: a registry could not be read.
	ScanFailedReason = "ScanFailed"
	// ReleaseCreatedReason: a ManifestUpdate was created for a newer tag.
	ReleaseCreatedReason = "ReleaseCreated"
	// TagNotVerifiedReason: a tag's image is unsigned or signed by no trusted key; it is
	// not released (an event names it once per digest).
	TagNotVerifiedReason = "TagNotVerified"
)

// GroupPerScan is the value of spec.automation.group that releases everything one scan finds
// in one ManifestUpdate, one commit.
const GroupPerScan = "perScan"

// Workload policies of the automation besides Flux v1's (docs/automation.md): the annotation
// fluxcd.io/<policy>.<container>.
const (
	// DigestPolicyPrefix: fluxcd.io/digest.<container>: pinned writes image:tag@digest.
	DigestPolicyPrefix = "digest."
	// DigestPinned is the value of the digest policy that pins digests.
	DigestPinned = "pinned"
	// MinimumAgePolicyPrefix: fluxcd.io/minimum-age.<container>: 24h releases a tag once its
	// image is that old.
	MinimumAgePolicyPrefix = "minimum-age."
	// VerifyPolicyPrefix: fluxcd.io/verify.<container>: cosign releases only tags whose image
	// has a signature of a key of spec.automation.verify.
	VerifyPolicyPrefix = "verify."
	// VerifyCosign is the value of the verify policy that requires a cosign signature.
	VerifyCosign = "cosign"
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

	// MinimumAge is how old an image must be before its tag is released: the newest tag that
	// has aged is released, so a younger one never holds back an older one. The age is the
	// image's creation time, or when the tag was first seen. A workload's
	// fluxcd.io/minimum-age.<container> annotation overrides it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(s|m|h))+$"
	// +optional
	MinimumAge *metav1.Duration `json:"minimumAge,omitempty"`

	// Verify requires a cosign signature, by one of the public keys of its Secret, of every
	// image released (with it, a workload's fluxcd.io/verify.<container>: cosign is implied).
	// +optional
	Verify *ImageVerification `json:"verify,omitempty"`

	// Group: empty, each workload's container is released by its own ManifestUpdate; perScan,
	// everything one scan finds goes in one ManifestUpdate, one commit, verified together.
	// +kubebuilder:validation:Enum=perScan
	// +optional
	Group string `json:"group,omitempty"`

	// Git says how the releases are committed (branch, author, message template, signing key):
	// it is the spec.git of the ManifestUpdates the automation creates.
	// +optional
	Git *GitCommitSpec `json:"git,omitempty"`

	// PullRequest proposes each release as a pull request on a branch of its own instead of
	// pushing to the branch: it is the spec.pullRequest of the ManifestUpdates.
	// +optional
	PullRequest *PullRequestSpec `json:"pullRequest,omitempty"`
}

// ImageVerification says which signatures an image needs before it is released.
type ImageVerification struct {
	// Provider of the signatures: cosign.
	// +kubebuilder:validation:Enum=cosign
	// +kubebuilder:default=cosign
	// +optional
	Provider string `json:"provider,omitempty"`

	// SecretRef names a Secret, in the same namespace, whose `*.pub` entries are the cosign
	// public keys (ECDSA, RSA or ed25519 PEM) a signature must verify with; with
	// matchOIDCIdentity, its `*.crt` entries are the certificate authority of the signing
	// certificates (Fulcio's root) and `rekor.pub` the transparency log's public key.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// MatchOIDCIdentity verifies keyless signatures, offline: one of these identities must be
	// named by the signing certificate.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OIDCIdentityMatch is an identity a keyless signing certificate may name: regular expressions
// (matched against the whole value) of the OIDC issuer and of the subject.
type OIDCIdentityMatch struct {
	// Issuer of the OIDC token the certificate was issued for, e.g.
	// `^https://token\.actions\.githubusercontent\.com$`.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Issuer string `json:"issuer"`
	// Subject of the certificate: an email, or a workflow's URL for CI tokens.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Subject string `json:"subject"`
}

// GetMinimumAge is spec.automation.minimumAge, 0 when unset.
func (in *Automation) GetMinimumAge() time.Duration {
	if in == nil || in.MinimumAge == nil {
		return 0
	}
	return in.MinimumAge.Duration
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

	// LastHandledScanRequest is the reconcile.fluxcd.io/requestedAt value (a Receiver's, or
	// `flux reconcile`'s) the last scan answered: a new one scans at once, listing the tags
	// afresh.
	// +optional
	LastHandledScanRequest string `json:"lastHandledScanRequest,omitempty"`
}

// MaxTagsSeen bounds status.automation.images[].seen.
const MaxTagsSeen = 16

// TagSeen is when a tag whose image says nothing of its creation was first seen: its age.
type TagSeen struct {
	// Tag is the tag.
	Tag string `json:"tag"`
	// Since is when the scan first saw it.
	Since metav1.Time `json:"since"`
}

// WaitingTag is a newer tag not released yet because its image is younger than the minimum age.
type WaitingTag struct {
	// Tag is the tag.
	Tag string `json:"tag"`
	// EligibleAt is when it comes of age.
	EligibleAt metav1.Time `json:"eligibleAt"`
}

// RefusedTag is a newer tag that is not released because its signature does not verify.
type RefusedTag struct {
	// Tag is the tag.
	Tag string `json:"tag"`
	// Digest is the digest of the image refused.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Reason says why, e.g. that no key of the Secret verifies a signature.
	Reason string `json:"reason"`
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
	// Digest is the digest of LatestTag, when its digest is pinned or its signature verified.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Waiting is the newest tag that waits for its minimum age.
	// +optional
	Waiting *WaitingTag `json:"waiting,omitempty"`
	// Refused are newer tags whose signatures do not verify (the newest first, at most 8).
	// +optional
	Refused []RefusedTag `json:"refused,omitempty"`
	// Seen are the tags newer than the image's whose age is when they were first seen (at most
	// MaxTagsSeen), kept so that a restart does not make them young again.
	// +optional
	Seen []TagSeen `json:"seen,omitempty"`
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
