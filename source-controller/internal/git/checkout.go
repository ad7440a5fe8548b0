package git

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

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
//
// maxSize (--git-max-clone-size; 0: no limit) bounds what the clone writes, .git and working
// tree together: the objects are fetched first, stopped once over it; the working tree is
// written only if its files, added to them, stay within it. Over it, the error wraps
// ErrCloneTooLarge and says the size; dir is left for the caller to remove.
func Checkout(ctx context.Context, dir, url string, rev Revision, auth *gitauth.Auth, maxSize int64) (Commit, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Commit{}, err
	}
	// What gogit.PlainClone does (a worktree at dir, its .git inside), through the budget.
	b := &budget{limit: maxSize}
	wt := budgetFS{Filesystem: osfs.New(dir), budget: b}
	dot, err := wt.Chroot(gogit.GitDirName)
	if err != nil {
		return Commit{}, err
	}
	opts := &gogit.CloneOptions{
		URL:          url,
		Auth:         auth.Method,
		CABundle:     auth.CABundle,
		Tags:         gogit.NoTags,
		SingleBranch: rev.RefName != "",
		NoCheckout:   true,
	}
	if rev.RefName != "" {
		opts.ReferenceName = rev.RefName
	}
	if !rev.Pinned {
		opts.Depth = 1
	}
	repo, err := gogit.CloneContext(ctx, filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), wt, opts)
	if b.exceeded.Load() {
		return Commit{}, b.tooLarge(maxSize, true)
	}
	if err != nil {
		return Commit{}, err
	}
	head, err := repo.Head()
	if err != nil {
		return Commit{}, err
	}
	target := head.Hash()
	if rev.Pinned {
		target = plumbing.NewHash(rev.Hash)
	}
	c, err := repo.CommitObject(target)
	if err != nil {
		if rev.Pinned {
			return Commit{}, fmt.Errorf("%w: commit '%s': %v", ErrRefNotFound, rev.Hash, err)
		}
		return Commit{}, err
	}
	if maxSize > 0 {
		files, err := treeSize(c)
		if err != nil {
			return Commit{}, err
		}
		if size := b.written.Load() + files; size > maxSize {
			return Commit{}, b.tooLarge(size, false)
		}
	}
	if err := checkoutTree(repo, target, rev.Pinned); err != nil {
		if b.exceeded.Load() {
			return Commit{}, b.tooLarge(maxSize, true)
		}
		return Commit{}, err
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return Commit{Revision: rev.WithHash(target.String()), Subject: subject}, nil
}

// checkoutTree writes the working tree of commit: the fetched head as gogit's clone does, or the
// pinned commit, detached.
func checkoutTree(repo *gogit.Repository, commit plumbing.Hash, pinned bool) error {
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if pinned {
		return wt.Checkout(&gogit.CheckoutOptions{Hash: commit, Force: true})
	}
	return wt.Reset(&gogit.ResetOptions{Mode: gogit.MergeReset, Commit: commit})
}

// treeSize is the size of the files of c's tree, what its checkout writes; object headers give
// it without reading the content.
func treeSize(c *object.Commit) (int64, error) {
	tree, err := c.Tree()
	if err != nil {
		return 0, err
	}
	var size int64
	err = tree.Files().ForEach(func(f *object.File) error {
		size += f.Size
		return nil
	})
	return size, err
}
