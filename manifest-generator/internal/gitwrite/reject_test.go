package gitwrite_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

const declineHook = `#!/bin/sh
echo "GL-HOOK-ERR: branch master is protected: open a merge request" >&2
exit 1
`

// A pre-receive hook that declines: the error is ErrRejected with the server's reason and the
// hook's message, at the first attempt; nothing is pushed.
func TestPushRejectedByHookOverHTTP(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)
	installHook(t, repo, "pre-receive", declineHook)

	calls := 0
	_, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	t.Log(err)
	g.Expect(err).To(MatchError(gitwrite.ErrRejected))
	g.Expect(err.Error()).To(ContainSubstring("pre-receive hook declined"))
	g.Expect(err.Error()).To(ContainSubstring("GL-HOOK-ERR: branch master is protected: open a merge request"))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	g.Expect(calls).To(Equal(1))
	g.Expect(serverHead(t, repo)).To(Equal(base))
	g.Expect(emptyDir(t, opts.Dir)).To(BeEmpty())
}

func TestPushRejectedByHookOverSSH(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "fleet")
	base := repo.Commit(t, "Initial commit", map[string]string{"apps/podinfo.yaml": "image: podinfo:6.0.0\n"})
	installHook(t, repo, "update", "#!/bin/sh\necho \"refusing $1\" >&2\nexit 1\n")
	opts := options(t, repo.SSHURL(), authFor(t, repo.SSHURL(), map[string][]byte{
		"identity": srv.Identity().PrivateKeyPEM, "known_hosts": srv.KnownHosts(),
	}))

	calls := 0
	_, err := gitwrite.Push(context.Background(), opts, func(dir string) error {
		calls++
		return writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"})(dir)
	})
	t.Log(err)
	g.Expect(err).To(MatchError(gitwrite.ErrRejected))
	g.Expect(err.Error()).To(ContainSubstring("hook declined"))
	g.Expect(err.Error()).To(ContainSubstring("refusing refs/heads/master"))
	g.Expect(calls).To(Equal(1))
	g.Expect(serverHead(t, repo)).To(Equal(base))
}

// Wrong credentials fail at once as an authentication error that does not show them, also when
// the URL carries them.
func TestPushAuthErrorHidesCredentials(t *testing.T) {
	g := NewWithT(t)
	repo, base, opts := httpRepo(t)

	opts.Auth = authFor(t, repo.HTTPURL(), map[string][]byte{"username": []byte("bob"), "password": []byte("not-the-password")})
	calls := 0
	_, err := gitwrite.Push(context.Background(), opts, func(string) error { calls++; return nil })
	g.Expect(err).To(HaveOccurred())
	t.Log(err)
	g.Expect(gitauth.IsAuthError(err)).To(BeTrue(), err.Error())
	g.Expect(err.Error()).NotTo(ContainSubstring("not-the-password"))
	g.Expect(calls).To(BeZero())

	opts.Auth = nil
	opts.URL = "http://bob:url-secret@" + repo.HTTPURL()[len("http://"):] + "-missing"
	_, err = gitwrite.Push(context.Background(), opts, func(string) error { calls++; return nil })
	g.Expect(err).To(HaveOccurred())
	t.Log(err)
	g.Expect(err.Error()).NotTo(ContainSubstring("url-secret"))
	g.Expect(calls).To(BeZero())
	g.Expect(serverHead(t, repo)).To(Equal(base))
}
