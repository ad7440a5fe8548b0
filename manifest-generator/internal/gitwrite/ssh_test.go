package gitwrite_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// Push over the SSH transport with the identity and known_hosts of a Secret.
func TestPushOverSSH(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "fleet")
	base := repo.Commit(t, "Initial commit", map[string]string{"apps/podinfo.yaml": "image: podinfo:6.0.0\n"})
	opts := options(t, repo.SSHURL(), authFor(t, repo.SSHURL(), map[string][]byte{
		"identity": srv.Identity().PrivateKeyPEM, "known_hosts": srv.KnownHosts(),
	}))

	calls := 0
	commit, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		if calls == 1 {
			repo.Commit(t, "Concurrent", map[string]string{"other.yaml": "x: 1\n"})
		}
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(2))
	g.Expect(serverHead(t, repo)).To(Equal(commit))
	g.Expect(gitIn(t, repo.Dir, "rev-list", "--count", base+"..master")).To(Equal("2"))
	g.Expect(gitIn(t, repo.Dir, "diff", "--name-only", commit+"^", commit)).To(Equal("apps/podinfo.yaml"))
}
