package git

import (
	"context"
	"fmt"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sluice-gitops/sluice/shared/gitauth"
)

// Commit is what was checked out.
type Commit struct {
	Revision Revision
	// Subject is the first line of the commit message.
	Subject string
}

// Checkout clones the repository into dir at rev: a shallow, single-reference clone for
// branches, tags and references; for a commit, the branch (or the whole repository) and then
// the commit. The returned revision carries the commit actually checked out.
func Checkout(ctx context.Context, dir, url string, rev Revision, auth *gitauth.Auth) (Commit, error) {
	opts := &gogit.CloneOptions{
		URL:          url,
		Auth:         auth.Method,
		CABundle:     auth.CABundle,
		Tags:         gogit.NoTags,
		SingleBranch: rev.RefName != "",
	}
	fixedCommit := rev.Pinned
	if rev.RefName != "" {
		opts.ReferenceName = rev.RefName
	}
	if !fixedCommit {
		opts.Depth = 1
	}
	repo, err := gogit.PlainCloneContext(ctx, dir, false, opts)
	if err != nil {
		return Commit{}, err
	}
	if fixedCommit {
		wt, err := repo.Worktree()
		if err != nil {
			return Commit{}, err
		}
		if err := wt.Checkout(&gogit.CheckoutOptions{Hash: plumbing.NewHash(rev.Hash), Force: true}); err != nil {
			return Commit{}, fmt.Errorf("%w: commit '%s': %v", ErrRefNotFound, rev.Hash, err)
		}
	}
	head, err := repo.Head()
	if err != nil {
		return Commit{}, err
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return Commit{}, err
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return Commit{Revision: rev.WithHash(head.Hash().String()), Subject: subject}, nil
}
