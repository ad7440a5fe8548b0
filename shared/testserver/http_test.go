package testserver_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestHTTPCloneAnonymous(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n"})

	cloned, err := goGitClone(repo.HTTPURL(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	head, err := cloned.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(sha))
	g.Expect(head.Name().String()).To(Equal("refs/heads/master"))
	g.Expect(readFile(t, cloned, "deploy/cm.yaml")).To(Equal("kind: ConfigMap\n"))

	dir := t.TempDir()
	out, err := gitCLI(t, dir, nil, "clone", "--quiet", repo.HTTPURL(), "app")
	g.Expect(err).NotTo(HaveOccurred(), out)
	data, err := os.ReadFile(filepath.Join(dir, "app", "deploy", "cm.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("kind: ConfigMap\n"))
}

func TestHTTPCloneUnknownRepository(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{})
	_, err := goGitClone(srv.HTTPURL()+"/missing.git", nil, nil)
	g.Expect(errors.Is(err, transport.ErrRepositoryNotFound)).To(BeTrue(), "%v", err)
}

func TestHTTPBasicAuth(t *testing.T) {
	srv := testserver.NewGitServer(t, testserver.Options{Username: "flux", Password: "s3cret"})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "a"})

	t.Run("go-git with the right credentials", func(t *testing.T) {
		g := NewWithT(t)
		cloned, err := goGitClone(repo.HTTPURL(), &githttp.BasicAuth{Username: "flux", Password: "s3cret"}, nil)
		g.Expect(err).NotTo(HaveOccurred())
		head, err := cloned.Head()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(head.Hash().String()).To(Equal(sha))
	})
	t.Run("go-git with a wrong password", func(t *testing.T) {
		g := NewWithT(t)
		// The server answers 401 to bad credentials, which go-git maps to
		// ErrAuthenticationRequired (ErrAuthorizationFailed is for 403).
		_, err := goGitClone(repo.HTTPURL(), &githttp.BasicAuth{Username: "flux", Password: "wrong"}, nil)
		g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue(), "%v", err)
		g.Expect(errors.Is(err, transport.ErrAuthorizationFailed)).To(BeFalse())
	})
	t.Run("go-git without credentials", func(t *testing.T) {
		g := NewWithT(t)
		_, err := goGitClone(repo.HTTPURL(), nil, nil)
		g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue(), "%v", err)
	})
	t.Run("git CLI with the right and wrong credentials", func(t *testing.T) {
		g := NewWithT(t)
		withCreds := strings.Replace(repo.HTTPURL(), "http://", "http://flux:s3cret@", 1)
		out, err := gitCLI(t, t.TempDir(), nil, "clone", "--quiet", withCreds, "app")
		g.Expect(err).NotTo(HaveOccurred(), out)

		wrong := strings.Replace(repo.HTTPURL(), "http://", "http://flux:wrong@", 1)
		out, err = gitCLI(t, t.TempDir(), nil, "clone", "--quiet", wrong, "app")
		g.Expect(err).To(HaveOccurred())
		g.Expect(out).To(ContainSubstring("Authentication failed"))
	})
	t.Run("git CLI push with credentials", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		withCreds := strings.Replace(repo.HTTPURL(), "http://", "http://flux:s3cret@", 1)
		out, err := gitCLI(t, dir, nil, "clone", "--quiet", withCreds, "app")
		g.Expect(err).NotTo(HaveOccurred(), out)
		work := filepath.Join(dir, "app")
		g.Expect(os.WriteFile(filepath.Join(work, "b.txt"), []byte("b"), 0o644)).To(Succeed())
		ident := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		for _, args := range [][]string{{"add", "b.txt"}, {"commit", "--quiet", "-m", "b"}, {"push", "--quiet", "origin", "master"}} {
			out, err := gitCLI(t, work, ident, args...)
			g.Expect(err).NotTo(HaveOccurred(), out)
		}
		pushed, err := gitCLI(t, work, nil, "rev-parse", "HEAD")
		g.Expect(err).NotTo(HaveOccurred())
		refs, err := lsRemote(repo.HTTPURL(), &githttp.BasicAuth{Username: "flux", Password: "s3cret"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", pushed))
	})
}

func TestHTTPBearerToken(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{BearerToken: "tok-123"})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "a"})

	refs, err := lsRemote(repo.HTTPURL(), &githttp.TokenAuth{Token: "tok-123"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", sha))

	_, err = lsRemote(repo.HTTPURL(), &githttp.TokenAuth{Token: "nope"})
	g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue(), "%v", err)
	// A bearer-only server takes no basic credentials.
	_, err = lsRemote(repo.HTTPURL(), &githttp.BasicAuth{Username: "x", Password: "tok-123"})
	g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue(), "%v", err)

	out, err := gitCLI(t, t.TempDir(), nil, "-c", "http.extraHeader=Authorization: Bearer tok-123", "ls-remote", repo.HTTPURL())
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(sha + "\trefs/heads/master"))
}

func TestHTTPSWithCA(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{TLS: true, Username: "flux", Password: "s3cret"})
	g.Expect(srv.HTTPURL()).To(HavePrefix("https://127.0.0.1:"))
	g.Expect(string(srv.CAPEM())).To(HavePrefix("-----BEGIN CERTIFICATE-----"))
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "a"})
	auth := &githttp.BasicAuth{Username: "flux", Password: "s3cret"}

	cloned, err := goGitClone(repo.HTTPURL(), auth, srv.CAPEM())
	g.Expect(err).NotTo(HaveOccurred())
	head, err := cloned.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(sha))

	// Without the CA the certificate is not trusted.
	_, err = goGitClone(repo.HTTPURL(), auth, nil)
	g.Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))

	caFile := writeTemp(t, "ca.crt", srv.CAPEM())
	withCreds := strings.Replace(repo.HTTPURL(), "https://", "https://flux:s3cret@", 1)
	out, err := gitCLI(t, t.TempDir(), nil, "-c", "http.sslCAInfo="+caFile, "ls-remote", withCreds)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(sha + "\trefs/heads/master"))

	out, err = gitCLI(t, t.TempDir(), nil, "ls-remote", withCreds)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("certificate"))

	g.Expect(testserver.NewGitServer(t, testserver.Options{}).CAPEM()).To(BeNil())
}

// Protocol v2 reaches http-backend through the Git-Protocol header (HTTP_GIT_PROTOCOL).
func TestHTTPProtocolV2(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "a"})

	out, err := gitCLI(t, t.TempDir(), []string{"GIT_TRACE_PACKET=1"}, "-c", "protocol.version=2", "ls-remote", repo.HTTPURL())
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("version 2"))
	g.Expect(out).To(ContainSubstring(sha + "\trefs/heads/master"))
}
