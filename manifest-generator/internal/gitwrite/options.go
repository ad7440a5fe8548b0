// Package gitwrite writes a change to a Git repository and pushes it, for the ManifestUpdate
// reconciler: clone the branch, let the caller edit the work tree, commit what changed (signed
// when asked) and push; when someone else pushed in between, start over from the new tip.
// It is built on go-git; credentials come from the shared gitauth package.
package gitwrite

import (
	"errors"
	"net/url"
	"strings"

	"github.com/sluice-gitops/sluice/shared/gitauth"
)

// DefaultMaxAttempts is how many times Push clones, changes and pushes when the branch keeps
// moving under it.
const DefaultMaxAttempts = 3

// Author is the author and committer of the commits Push makes.
type Author struct {
	Name  string
	Email string
}

// Options say where to push what.
type Options struct {
	// URL is the repository's http(s) or ssh URL.
	URL string
	// Auth is the credential (gitauth.AuthFromSecret); nil is anonymous.
	Auth *gitauth.Auth
	// Branch is checked out and pushed to.
	Branch string
	// BaseBranch, when set, is checked out instead while Branch does not exist on the server;
	// the first push then creates Branch from it (Flux's separate checkout and push branches).
	BaseBranch string
	// FromBase always starts from BaseBranch and replaces Branch with the result (a forced
	// push): the branch of a pull request holds one change on top of its base, whatever it held.
	FromBase bool
	// Author signs the commit, as author and committer.
	Author Author
	// Message is the commit message.
	Message string
	// Signer, when set, signs the commit (GPGSigner or SSHSigner).
	Signer *Signer
	// MaxAttempts bounds the clone-change-push rounds when the branch moves meanwhile
	// (DefaultMaxAttempts when zero or less).
	MaxAttempts int
	// Dir is the scratch directory the clones go to (the system's temp dir when empty). Each
	// attempt clones into a new directory under it and removes it afterwards.
	Dir string
}

func (o Options) validate() error {
	var missing []string
	if o.URL == "" {
		missing = append(missing, "URL")
	}
	if o.Branch == "" {
		missing = append(missing, "Branch")
	}
	if o.Author.Name == "" || o.Author.Email == "" {
		missing = append(missing, "Author name and email")
	}
	if strings.TrimSpace(o.Message) == "" {
		missing = append(missing, "Message")
	}
	if len(missing) > 0 {
		return errors.New("gitwrite: missing " + strings.Join(missing, ", "))
	}
	return nil
}

func (o Options) maxAttempts() int {
	if o.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return o.MaxAttempts
}

// redactedURL is the URL as errors may show it: without a password in its user info.
func (o Options) redactedURL() string {
	u, err := url.Parse(o.URL)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
