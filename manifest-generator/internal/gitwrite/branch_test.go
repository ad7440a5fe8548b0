package gitwrite_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
)

// A push branch that does not exist starts from the base branch; once it exists, the next
// change builds on it, and the base branch is never written.
func TestPushCreatesTheBranchFromTheBase(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)
	opts.BaseBranch, opts.Branch = "master", "flux/updates"

	first, err := gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitIn(t, repo.Dir, "rev-parse", "refs/heads/flux/updates")).To(Equal(first))
	g.Expect(gitIn(t, repo.Dir, "log", "-1", "--format=%P", first)).To(Equal(base))
	g.Expect(serverHead(t, repo)).To(Equal(base), "master is untouched")

	second, err := gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"apps/redis.yaml": "image: redis:7.2.0\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitIn(t, repo.Dir, "log", "-1", "--format=%P", second)).To(Equal(first))
	g.Expect(gitIn(t, repo.Dir, "show", second+":apps/podinfo.yaml")).To(Equal("image: podinfo:6.1.0"))
	g.Expect(serverHead(t, repo)).To(Equal(base))

	// Without a base branch a missing branch is an error that names it.
	opts.BaseBranch, opts.Branch = "", "missing"
	_, err = gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"a": "b"}))
	g.Expect(err).To(MatchError(ContainSubstring("cloning branch 'missing'")))
}

// FromBase (a pull request's branch) always starts from the base branch and replaces whatever
// the push branch held: each push leaves one commit on top of the base.
func TestPushFromBaseReplacesTheBranch(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)
	opts.BaseBranch, opts.Branch, opts.FromBase = "master", "sluice/apps/podinfo", true

	first, err := gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitIn(t, repo.Dir, "log", "-1", "--format=%P", first)).To(Equal(base))

	second, err := gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.2.0\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitIn(t, repo.Dir, "rev-parse", "refs/heads/sluice/apps/podinfo")).To(Equal(second))
	g.Expect(gitIn(t, repo.Dir, "log", "-1", "--format=%P", second)).To(Equal(base), "the first commit is replaced, not built on")
	g.Expect(serverHead(t, repo)).To(Equal(base), "master is untouched")
}
