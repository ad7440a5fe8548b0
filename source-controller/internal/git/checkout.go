package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Commit is what was checked out.
type Commit struct {
	Revision Revision
	// Subject is the first line of the commit message.
	Subject string
	// Files is the commit's tree, read from the fetched objects (no working tree is written),
	// in fs.WalkDir order as a directory on disk is; valid until the clone's dir is removed.
	Files fs.FS
	// Object is the commit object, whose signature spec.verify checks.
	Object *object.Commit
	// Tag is the annotated tag the reference names, nil for any other reference.
	Tag *object.Tag
}

// inMemoryMax bounds the clones kept in memory: their objects are fetched into memory rather
// than files, which costs less CPU than the files' system calls. A clone that goes over it is
// fetched again into dir.
var inMemoryMax int64 = 32 << 20

// Checkout clones the repository at rev: a shallow, single-reference clone for branches, tags
// and references; for a commit, the branch (or the whole repository) and then the commit. The
// returned revision carries the commit actually checked out and Files its tree. The objects are
// kept in memory up to inMemoryMax, else in the directory dir makes (called then only).
//
// maxSize (--git-max-clone-size; 0: no limit) bounds the clone, its objects and its files
// together, as a clone with a working tree would write them: the objects are fetched first,
// stopped once over it; then the files, added to them, must stay within it. Over it, the error
// wraps ErrCloneTooLarge and says the size; dir is left for the caller to remove.
//
// With recurseSubmodules, the repositories of the submodules are fetched into the same object
// storage, within the same budget, and Files holds the trees of the commits they pin.
func Checkout(ctx context.Context, dir func() (string, error), remote Remote, rev Revision, maxSize int64, recurseSubmodules bool) (Commit, error) {
	b := &budget{limit: inMemoryMax}
	if maxSize > 0 && maxSize <= inMemoryMax {
		b.limit = maxSize
	}
	c, err := checkout(ctx, budgetFS{Filesystem: memfs.New(), budget: b}, true, b, remote, rev, maxSize, recurseSubmodules)
	if !b.exceeded.Load() || b.limit == maxSize {
		return c, err
	}
	path, err := dir()
	if err != nil {
		return Commit{}, err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return Commit{}, err
	}
	b = &budget{limit: maxSize}
	return checkout(ctx, budgetFS{Filesystem: osfs.New(path), budget: b}, false, b, remote, rev, maxSize, recurseSubmodules)
}

// checkout is Checkout into the object storage dot, in memory or not, whose writes b counts.
func checkout(ctx context.Context, dot billy.Filesystem, inMemory bool, b *budget, remote Remote, rev Revision, maxSize int64, recurseSubmodules bool) (Commit, error) {
	opts := &gogit.CloneOptions{
		URL:          remote.URL,
		Auth:         remote.Auth.Method,
		CABundle:     remote.Auth.CABundle,
		ProxyOptions: remote.Proxy,
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
	// A bare clone: no worktree. Only go-git writes to dot (ExclusiveAccess): it lists the
	// objects once rather than looking every object up as a file first. In memory, the pack is
	// opened once rather than for every object read; on disk, that would need the storage
	// closed.
	st := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRUDefault(), filesystem.Options{ExclusiveAccess: true, KeepDescriptors: inMemory})
	repo, err := gogit.CloneContext(ctx, st, nil, opts)
	if b.exceeded.Load() {
		return Commit{}, tooLarge(b.limit, b.limit, true)
	}
	if err != nil {
		return Commit{}, refNotFound(err, rev)
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
	if recurseSubmodules {
		n := 0
		if err := fetchSubmodules(ctx, repo.Storer, b, c, remote, &n, 0); err != nil {
			return Commit{}, err
		}
	}
	files := newTreeFS(repo.Storer, c.TreeHash)
	files.submodules = recurseSubmodules
	if maxSize > 0 {
		size, err := files.size()
		if err != nil {
			return Commit{}, err
		}
		if size += b.written.Load(); size > maxSize {
			return Commit{}, tooLarge(size, maxSize, false)
		}
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	tag, err := annotatedTag(repo, rev)
	if err != nil {
		return Commit{}, err
	}
	return Commit{Revision: rev.WithHash(target.String()), Subject: subject, Files: files, Object: c, Tag: tag}, nil
}

// refNotFound says, as Resolve would, that the remote has no such branch or tag, when the clone
// of a revision not listed first (Unlisted) found none.
func refNotFound(err error, rev Revision) error {
	var noMatch gogit.NoMatchingRefSpecError
	if rev.Hash != "" || !errors.As(err, &noMatch) && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return err
	}
	kind := "branch"
	if rev.RefName.IsTag() {
		kind = "tag"
	}
	return fmt.Errorf("%w: %s '%s' does not exist in the repository", ErrRefNotFound, kind, rev.Name)
}

// annotatedTag is the tag object of a tag reference (fetched with it), nil for a lightweight
// tag or another reference.
func annotatedTag(repo *gogit.Repository, rev Revision) (*object.Tag, error) {
	if !rev.RefName.IsTag() {
		return nil, nil
	}
	ref, err := repo.Reference(rev.RefName, false)
	if err != nil {
		return nil, nil // not fetched under its name: no tag object to tell
	}
	tag, err := repo.TagObject(ref.Hash())
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, nil
	}
	return tag, err
}
