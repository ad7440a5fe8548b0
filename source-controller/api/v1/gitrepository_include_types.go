package v1

import "github.com/fluxcd/pkg/apis/meta"

// GitRepositoryInclude copies (part of) the artifact of another GitRepository into this one's.
type GitRepositoryInclude struct {
	// GitRepositoryRef names the GitRepository, in the same namespace, whose artifact is copied.
	// +required
	GitRepositoryRef meta.LocalObjectReference `json:"repository"`

	// FromPath is the directory of that artifact to copy (default: all of it).
	// +optional
	FromPath string `json:"fromPath,omitempty"`

	// ToPath is where it goes in this artifact (default: the included GitRepository's name).
	// +optional
	ToPath string `json:"toPath,omitempty"`
}

// GetToPath is ToPath with its default.
func (in *GitRepositoryInclude) GetToPath() string {
	if in.ToPath == "" {
		return in.GitRepositoryRef.Name
	}
	return in.ToPath
}

// GitVerificationMode says which signatures of a revision are verified.
type GitVerificationMode string

const (
	// ModeGitHEAD verifies the commit the reference resolves to.
	ModeGitHEAD GitVerificationMode = "HEAD"
	// ModeGitTag verifies the tag object of a tag reference.
	ModeGitTag GitVerificationMode = "Tag"
	// ModeGitTagAndHEAD verifies the tag object and the commit it points to.
	ModeGitTagAndHEAD GitVerificationMode = "TagAndHEAD"
)

// GitRepositoryVerification checks the signatures of the fetched revision.
type GitRepositoryVerification struct {
	// Mode is HEAD (default: the commit), Tag (the tag object) or TagAndHEAD (both); `head` is
	// read as HEAD.
	// +kubebuilder:validation:Enum=head;HEAD;Tag;TagAndHEAD
	// +kubebuilder:default:=HEAD
	// +optional
	Mode GitVerificationMode `json:"mode,omitempty"`

	// SecretRef names a Secret in the same namespace whose values are the trusted public keys:
	// armored OpenPGP keys, or SSH public keys (authorized_keys lines) for SSH signatures.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// GetMode is Mode with its default, `head` read as HEAD.
func (v *GitRepositoryVerification) GetMode() GitVerificationMode {
	switch v.Mode {
	case "", "head":
		return ModeGitHEAD
	default:
		return v.Mode
	}
}
