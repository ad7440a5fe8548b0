package gitwrite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
)

// A change lands as exactly one commit on the branch, by the author with the message, whose
// diff is the changed file only; the clone is removed afterwards.
func TestPushCommitsTheChange(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)

	calls := 0
	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(1))
	g.Expect(commit).To(MatchRegexp(`^[0-9a-f]{40}$`))

	g.Expect(serverHead(t, repo)).To(Equal(commit))
	g.Expect(gitIn(t, repo.Dir, "rev-list", base+"..master")).To(Equal(commit))
	g.Expect(gitIn(t, repo.Dir, "log", "-1", "--format=%P|%an <%ae>|%cn <%ce>|%B", commit)).To(Equal(
		base + "|Sluice Bot <bot@sluice.invalid>|Sluice Bot <bot@sluice.invalid>|Update podinfo to 6.1.0"))
	g.Expect(gitIn(t, repo.Dir, "diff", "--name-status", base, commit)).To(Equal("M\tapps/podinfo.yaml"))
	g.Expect(gitIn(t, repo.Dir, "show", commit+":apps/podinfo.yaml")).To(Equal("image: podinfo:6.1.0"))
	g.Expect(gitIn(t, repo.Dir, "show", commit+":apps/redis.yaml")).To(Equal("image: redis:7.0.0"))
	g.Expect(gitIn(t, repo.Dir, "fsck", "--strict")).NotTo(ContainSubstring("error"))
	g.Expect(emptyDir(t, opts.Dir)).To(BeEmpty())
}

// New and deleted files are committed too (`git add -A`), and Changed lists them inside the
// change function.
func TestPushAddsAndDeletesFiles(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)

	var changed []string
	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		if err := writeFiles(map[string]string{"apps/redis.yaml": "", "apps/new/app.yaml": "image: new:1\n"})(dir); err != nil {
			return err
		}
		var err error
		changed, err = gitwrite.Changed(dir)
		return err
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(Equal([]string{"apps/new/app.yaml", "apps/redis.yaml"}))
	g.Expect(serverHead(t, repo)).To(Equal(commit))
	g.Expect(gitIn(t, repo.Dir, "diff", "--name-status", base, commit)).To(Equal("A\tapps/new/app.yaml\nD\tapps/redis.yaml"))
}

// A change that changes nothing (or writes the same bytes) makes no commit.
func TestPushWithoutChange(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)

	var changed []string
	for _, change := range []func(string) error{
		func(string) error { return nil },
		func(dir string) error {
			if err := writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.0.0\n"})(dir); err != nil {
				return err
			}
			var err error
			changed, err = gitwrite.Changed(dir)
			return err
		},
	} {
		commit, err := gitwrite.Push(context.Background(), opts, change)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(commit).To(BeEmpty())
	}
	g.Expect(changed).To(BeEmpty())
	g.Expect(serverHead(t, repo)).To(Equal(base))
	g.Expect(emptyDir(t, opts.Dir)).To(BeEmpty())
}

// Files the repository ignores are neither committed nor listed as changed.
func TestPushLeavesIgnoredFiles(t *testing.T) {
	g := NewWithT(t)
	repo, _, opts := httpRepo(t)
	base := repo.Commit(t, "Ignore scratch files", map[string]string{".gitignore": "*.tmp\n"})

	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		if err := writeFiles(map[string]string{"scratch.tmp": "x", "apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir); err != nil {
			return err
		}
		changed, err := gitwrite.Changed(dir)
		if err != nil {
			return err
		}
		g.Expect(changed).To(Equal([]string{"apps/podinfo.yaml"}))
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitIn(t, repo.Dir, "diff", "--name-only", base, commit)).To(Equal("apps/podinfo.yaml"))
}

// An error of the change function is returned as is, without a commit or a retry.
func TestPushReturnsTheChangeError(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)
	boom := errors.New("updater failed")
	calls := 0
	_, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		_ = os.WriteFile(filepath.Join(dir, "apps/podinfo.yaml"), []byte("half-written"), 0o644)
		return boom
	})
	g.Expect(err).To(MatchError(boom))
	g.Expect(calls).To(Equal(1))
	g.Expect(serverHead(t, repo)).To(Equal(base))
}

func TestPushValidatesOptions(t *testing.T) {
	g := NewWithT(t)
	_, err := gitwrite.Push(context.Background(), gitwrite.Options{}, func(string) error { return nil })
	g.Expect(err).To(MatchError("gitwrite: missing URL, Branch, Author name and email, Message"))
}
