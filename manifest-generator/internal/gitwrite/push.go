package gitwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Push clones opts.Branch (shallow), calls change with the work tree's directory, and when the
// tree differs afterwards commits everything (`git add -A`) and pushes. When someone else
// pushed to the branch meanwhile, it starts over from a fresh clone and calls change again, up
// to opts.MaxAttempts times, so the change always lands on top of the latest commit. It returns
// the pushed commit's SHA, or "" and no error when change changed nothing.
//
// A push the server refuses for another reason (a hook, a protected branch) fails at once with
// ErrRejected and the server's message; an error of change is returned as is. Errors never
// carry the credentials of opts.
func Push(ctx context.Context, opts Options, change func(dir string) error) (string, error) {
	if err := opts.validate(); err != nil {
		return "", err
	}
	redact := newRedactor(opts)
	var moved error
	for attempt := 1; attempt <= opts.maxAttempts(); attempt++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		commit, err := pushOnce(ctx, opts, change)
		if err == nil {
			return commit, nil
		}
		if !errors.Is(err, errMoved) {
			return "", redact.redact(err)
		}
		moved = err
	}
	return "", redact.redact(fmt.Errorf("%w (attempts: %d) while pushing to branch '%s' of '%s': %v",
		ErrBranchMoved, opts.maxAttempts(), opts.Branch, opts.redactedURL(), moved))
}

// errMoved marks an attempt whose push lost the race: the branch is no longer where the clone
// found it.
var errMoved = errors.New("branch moved")

// pushOnce is one attempt: clone, change, commit, push.
func pushOnce(ctx context.Context, opts Options, change func(dir string) error) (string, error) {
	dir, err := os.MkdirTemp(opts.Dir, "gitwrite-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)

	target := plumbing.NewBranchReferenceName(opts.Branch)
	local, create := target, false
	var repo *gogit.Repository
	if opts.FromBase && opts.BaseBranch != "" && opts.BaseBranch != opts.Branch {
		local, create = plumbing.NewBranchReferenceName(opts.BaseBranch), true
		repo, err = clone(ctx, dir, opts, local)
	} else {
		repo, err = clone(ctx, dir, opts, target)
	}
	if errors.Is(err, gogit.NoMatchingRefSpecError{}) && !create && opts.BaseBranch != "" && opts.BaseBranch != opts.Branch {
		// The push branch does not exist yet: start it from the base branch.
		if err = os.RemoveAll(dir); err == nil {
			local, create = plumbing.NewBranchReferenceName(opts.BaseBranch), true
			repo, err = clone(ctx, dir, opts, local)
		}
	}
	if err != nil {
		return "", fmt.Errorf("cloning branch '%s' of '%s': %w", local.Short(), opts.redactedURL(), err)
	}
	head, err := repo.Head()
	if err != nil {
		return "", err
	}
	base := head.Hash()

	if err := change(dir); err != nil {
		return "", err
	}

	hash, err := commitAll(repo, opts)
	if errors.Is(err, gogit.ErrEmptyCommit) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}

	// The lease is the commit the change was built on: the server takes the update only while
	// the branch is still there (the new commit is its child, so this is a fast-forward). Without
	// a lease, go-git would check the fast-forward by walking history the shallow clone lacks.
	var progress bytes.Buffer
	// A new branch is created only while it does not exist: the server refuses the update of a
	// ref whose old value is not the zero id it is sent.
	// The URL is the caller's, never the clone's configuration: what the change step did to the
	// work tree must not redirect the push (and its credentials) elsewhere.
	push := &gogit.PushOptions{
		RemoteName: gogit.DefaultRemoteName,
		RemoteURL:  opts.URL,
		RefSpecs:   []config.RefSpec{config.RefSpec(local + ":" + target)},
		Progress:   &progress,
	}
	switch {
	case opts.FromBase:
		// The branch is the change's alone: whatever it held is replaced.
		push.RefSpecs = []config.RefSpec{config.RefSpec("+" + local + ":" + target)}
		push.Force = true
	case !create:
		push.ForceWithLease = &gogit.ForceWithLease{RefName: target, Hash: base}
	}
	if opts.Auth != nil {
		push.Auth, push.CABundle = opts.Auth.Method, opts.Auth.CABundle
	}
	err = repo.PushContext(ctx, push)
	switch {
	case err == nil:
		return hash.String(), nil
	case branchMoved(err):
		return "", fmt.Errorf("%w: %v", errMoved, err)
	case refused(err):
		msg := fmt.Sprintf("%v: branch '%s' of '%s': %v", ErrRejected, opts.Branch, opts.redactedURL(), err)
		if server := serverMessages(progress.String()); server != "" {
			msg += " (remote: " + server + ")"
		}
		return "", &rejectedError{msg: msg}
	default:
		return "", fmt.Errorf("pushing to branch '%s' of '%s': %w", opts.Branch, opts.redactedURL(), err)
	}
}

// commitAll stages every change of the work tree, additions and deletions alike, and commits it.
func commitAll(repo *gogit.Repository, opts Options) (plumbing.Hash, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wt.AddWithOptions(&gogit.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("staging: %w", err)
	}
	sig := &object.Signature{Name: opts.Author.Name, Email: opts.Author.Email, When: time.Now()}
	commit := &gogit.CommitOptions{Author: sig, Committer: sig}
	opts.Signer.apply(commit)
	return wt.Commit(opts.Message, commit)
}

// rejectedError is ErrRejected with the server's message.
type rejectedError struct{ msg string }

func (e *rejectedError) Error() string        { return e.msg }
func (e *rejectedError) Is(target error) bool { return target == ErrRejected }

// clone makes a shallow clone of branch into dir.
func clone(ctx context.Context, dir string, opts Options, branch plumbing.ReferenceName) (*gogit.Repository, error) {
	o := &gogit.CloneOptions{
		URL:           opts.URL,
		ReferenceName: branch,
		SingleBranch:  true,
		Depth:         1,
		Tags:          gogit.NoTags,
	}
	if opts.Auth != nil {
		o.Auth, o.CABundle = opts.Auth.Method, opts.Auth.CABundle
	}
	return gogit.PlainCloneContext(ctx, dir, false, o)
}
