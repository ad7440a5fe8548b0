package gitwrite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
)

// Someone pushes to the branch between the clone and the push: Push starts over from the new
// tip and calls change again, so both commits are on the branch, ours on top.
func TestPushRetriesWhenTheBranchMoved(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)

	calls := 0
	var concurrent string
	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		if calls == 1 {
			concurrent = repo.Commit(t, "Someone else's change", map[string]string{"apps/redis.yaml": "image: redis:7.2.0\n"})
		}
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(2))

	g.Expect(serverHead(t, repo)).To(Equal(commit))
	g.Expect(gitIn(t, repo.Dir, "rev-list", base+"..master")).To(Equal(commit + "\n" + concurrent))
	g.Expect(gitIn(t, repo.Dir, "log", "-1", "--format=%P", commit)).To(Equal(concurrent))
	g.Expect(gitIn(t, repo.Dir, "diff", "--name-only", concurrent, commit)).To(Equal("apps/podinfo.yaml"))
	g.Expect(gitIn(t, repo.Dir, "show", commit+":apps/redis.yaml")).To(Equal("image: redis:7.2.0"))
	g.Expect(gitIn(t, repo.Dir, "show", commit+":apps/podinfo.yaml")).To(Equal("image: podinfo:6.1.0"))
	g.Expect(emptyDir(t, opts.Dir)).To(BeEmpty())
}

// When the concurrent commit already made our change, the retry finds nothing to do.
func TestPushRetryFindsTheChangeDone(t *testing.T) {
	g := NewWithT(t)
	repo, _, opts := httpRepo(t)

	calls := 0
	var concurrent string
	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		if calls == 1 {
			concurrent = repo.Commit(t, "Same change by hand", map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})
		}
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit).To(BeEmpty())
	g.Expect(calls).To(Equal(2))
	g.Expect(serverHead(t, repo)).To(Equal(concurrent))
}

// A branch that moves during every attempt: Push gives up after MaxAttempts with
// ErrBranchMoved, having pushed nothing of its own.
func TestPushGivesUpWhenTheBranchKeepsMoving(t *testing.T) {
	g := NewWithT(t)
	repo, _, opts := httpRepo(t)
	opts.MaxAttempts = 2

	calls := 0
	var last string
	_, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		last = repo.Commit(t, fmt.Sprintf("busy %d", calls), map[string]string{"busy.txt": fmt.Sprint(calls)})
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	t.Log(err)
	g.Expect(err).To(MatchError(gitwrite.ErrBranchMoved))
	g.Expect(err.Error()).To(ContainSubstring("(attempts: 2) while pushing to branch 'master' of '" + repo.HTTPURL() + "'"))
	g.Expect(calls).To(Equal(2))
	g.Expect(serverHead(t, repo)).To(Equal(last))
	g.Expect(emptyDir(t, opts.Dir)).To(BeEmpty())
}

// The default is three attempts.
func TestPushDefaultAttempts(t *testing.T) {
	g := NewWithT(t)
	repo, _, opts := httpRepo(t)
	calls := 0
	_, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		repo.Commit(t, "busy", map[string]string{"busy.txt": fmt.Sprint(calls)})
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	t.Log(err)
	g.Expect(err).To(MatchError(gitwrite.ErrBranchMoved))
	g.Expect(calls).To(Equal(gitwrite.DefaultMaxAttempts))
}

// The branch moves after the server advertised it, while the push is under way (here: a
// pre-receive hook moves it, once): receive-pack's lock check refuses the update, and Push
// starts over like for any other concurrent push.
func TestPushRetriesWhenTheBranchMovesDuringThePush(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)
	repo.Branch(t, "side")
	concurrent := repo.Commit(t, "Someone else's change", map[string]string{"apps/redis.yaml": "image: redis:7.2.0\n"})
	repo.Checkout(t, "master")
	marker := filepath.Join(t.TempDir(), "raced")
	installHook(t, repo, "pre-receive", fmt.Sprintf(`#!/bin/sh
cat >/dev/null
if [ ! -e %[1]q ]; then
	touch %[1]q
	env -u GIT_QUARANTINE_PATH git update-ref refs/heads/master %[2]s || exit 1
fi
`, marker, concurrent))

	calls := 0
	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(2))
	g.Expect(serverHead(t, repo)).To(Equal(commit))
	g.Expect(gitIn(t, repo.Dir, "rev-list", base+"..master")).To(Equal(commit + "\n" + concurrent))
	g.Expect(gitIn(t, repo.Dir, "diff", "--name-only", concurrent, commit)).To(Equal("apps/podinfo.yaml"))
}
