package testserver_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestRepoPushedCommitSeenByLsRemote(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "app")
	first := repo.Commit(t, "first", map[string]string{"a.txt": "a"})

	refs, err := lsRemote(repo.HTTPURL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", first))

	second := repo.Commit(t, "second", map[string]string{"a.txt": "a2"})
	g.Expect(second).NotTo(Equal(first))
	g.Expect(second).To(MatchRegexp(`^[0-9a-f]{40}$`))
	refs, err = lsRemote(repo.HTTPURL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", second))
	g.Expect(refs).To(HaveKeyWithValue("HEAD", "ref: refs/heads/master"))
}

func TestRepoTags(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	first := repo.Commit(t, "first", map[string]string{"a.txt": "a"})
	g.Expect(repo.Tag(t, "v1.0.0", false)).To(Equal(first))
	second := repo.Commit(t, "second", map[string]string{"a.txt": "b"})
	g.Expect(repo.Tag(t, "v2.0.0", true)).To(Equal(second))

	refs, err := lsRemote(repo.SSHURL(), sshAuth(t, srv.Identity().PrivateKeyPEM, srv.KnownHosts()))
	g.Expect(err).NotTo(HaveOccurred())
	// A lightweight tag names the commit; an annotated one names a tag object, whose peeled
	// value is the commit.
	g.Expect(refs).To(HaveKeyWithValue("refs/tags/v1.0.0", first))
	g.Expect(refs).NotTo(HaveKey("refs/tags/v1.0.0^{}"))
	g.Expect(refs).To(HaveKey("refs/tags/v2.0.0"))
	g.Expect(refs["refs/tags/v2.0.0"]).NotTo(Equal(second))
	g.Expect(refs).To(HaveKeyWithValue("refs/tags/v2.0.0^{}", second))

	cloned, err := goGitClone(repo.HTTPURL(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	tagRef, err := cloned.Tag("v2.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	tagObj, err := cloned.TagObject(tagRef.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tagObj.Message).To(Equal("v2.0.0\n"))
	g.Expect(tagObj.Target.String()).To(Equal(second))
	g.Expect(tagObj.Tagger.Name).To(Equal(testserver.AuthorName))
}

func TestRepoBranchesCheckoutAndDeletes(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "org/app")
	g.Expect(repo.Name).To(Equal("org/app.git"))
	g.Expect(repo.HTTPURL()).To(Equal(srv.HTTPURL() + "/org/app.git"))
	base := repo.Commit(t, "base", map[string]string{"a.txt": "a", "dir/b.txt": "b"})

	repo.Branch(t, "dev")
	g.Expect(repo.CurrentBranch(t)).To(Equal("dev"))
	dev := repo.Commit(t, "drop b", map[string]string{"dir/b.txt": ""})
	repo.Checkout(t, "master")
	master := repo.Commit(t, "change a", map[string]string{"a.txt": "a2"})
	empty := repo.Commit(t, "nothing", nil)
	g.Expect(empty).NotTo(Equal(master))

	refs, err := lsRemote(repo.HTTPURL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", empty))
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/dev", dev))
	g.Expect(dev).NotTo(Equal(base))

	cloned, err := goGitClone(repo.HTTPURL(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := cloned.CommitObject(plumbing.NewHash(dev))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.Message).To(Equal("drop b\n"))
	_, err = commit.File("dir/b.txt")
	g.Expect(err).To(HaveOccurred(), "deleted on dev")
	file, err := commit.File("a.txt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file.Contents()).To(Equal("a"))
	g.Expect(readFile(t, cloned, "a.txt")).To(Equal("a2"))
	g.Expect(readFile(t, cloned, "dir/b.txt")).To(Equal("b"))

	// The bare repository sits under the server root.
	_, err = os.Stat(filepath.Join(srv.Root(), "org", "app.git", "HEAD"))
	g.Expect(err).NotTo(HaveOccurred())
}

// The same calls with the same Date give the same SHAs on any server, any day.
func TestRepoDeterministicDate(t *testing.T) {
	g := NewWithT(t)
	date := time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	build := func() []string {
		repo := testserver.NewGitServer(t, testserver.Options{}).NewRepo(t, "app")
		repo.Date = date
		return []string{
			repo.Commit(t, "first", map[string]string{"a.txt": "a"}),
			repo.Tag(t, "v1", true),
			repo.Commit(t, "second", map[string]string{"b.txt": "b"}),
		}
	}
	a, b := build(), build()
	g.Expect(a).To(Equal(b))

	repo := testserver.NewGitServer(t, testserver.Options{}).NewRepo(t, "app")
	repo.Date = date
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "a"})
	g.Expect(sha).To(Equal(a[0]))
	cloned, err := goGitClone(repo.HTTPURL(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := cloned.CommitObject(plumbing.NewHash(sha))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.Committer.When.Equal(date)).To(BeTrue(), "%v", commit.Committer.When)
	g.Expect(commit.Author.Email).To(Equal(testserver.AuthorEmail))
}

// The helpers take testing.TB, so benchmarks can serve repositories too.
func BenchmarkCloneHTTP(b *testing.B) {
	srv := testserver.NewGitServer(b, testserver.Options{})
	repo := srv.NewRepo(b, "app")
	repo.Commit(b, "first", map[string]string{"a.txt": "a"})
	for b.Loop() {
		if _, err := goGitClone(repo.HTTPURL(), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
