package gitauth_test

import (
	"context"
	"encoding/pem"
	"net/url"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// headOf lists the remote's references with the credentials (ls-remote) and returns master's
// commit: the credentials work against a real server.
func headOf(url string, auth *gitauth.Auth) (string, error) {
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(context.Background(), &gogit.ListOptions{Auth: auth.Method, CABundle: auth.CABundle})
	if err != nil {
		return "", err
	}
	for _, r := range refs {
		if r.Name().String() == "refs/heads/master" {
			return r.Hash().String(), nil
		}
	}
	return "", nil
}

// The keys of the Secret pick the credential for the URL's scheme.
func TestAuthFromSecretHTTP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   map[string][]byte
		method any
		ca     []byte
	}{
		{name: "no secret is anonymous", data: nil, method: nil},
		{name: "basic auth", data: map[string][]byte{"username": []byte("bob"), "password": []byte("pw")},
			method: &githttp.BasicAuth{Username: "bob", Password: "pw"}},
		{name: "password only", data: map[string][]byte{"password": []byte("pw")},
			method: &githttp.BasicAuth{Password: "pw"}},
		{name: "bearer token wins over basic auth",
			data:   map[string][]byte{"bearerToken": []byte("tok"), "username": []byte("bob"), "password": []byte("pw")},
			method: &githttp.TokenAuth{Token: "tok"}},
		{name: "CA bundle alone", data: map[string][]byte{"ca.crt": []byte("PEM")}, method: nil, ca: []byte("PEM")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			for _, scheme := range []string{"http", "https"} {
				auth, err := gitauth.AuthFromSecret(mustParse(t, scheme+"://example.com/repo.git"), tc.data, t.TempDir())
				g.Expect(err).NotTo(HaveOccurred())
				if tc.method == nil {
					g.Expect(auth.Method).To(BeNil())
				} else {
					g.Expect(auth.Method).To(Equal(tc.method))
				}
				g.Expect(auth.CABundle).To(Equal(tc.ca))
			}
		})
	}
}

// SSH needs a usable key and known_hosts; every problem is ErrInvalidCredentials with a message
// naming the key of the Secret to fix.
func TestAuthFromSecretSSHInvalid(t *testing.T) {
	key := testserver.NewKeyPair(t, "")
	hosts := []byte("[127.0.0.1]:22 " + string(key.AuthorizedKey()))
	for _, tc := range []struct {
		name string
		data map[string][]byte
		msg  string
	}{
		{name: "no secret", data: nil, msg: "ssh needs the 'identity' key"},
		{name: "no known_hosts", data: map[string][]byte{"identity": key.PrivateKeyPEM}, msg: "ssh needs the 'known_hosts' key"},
		{name: "garbage identity", data: map[string][]byte{"identity": []byte("nope"), "known_hosts": hosts},
			msg: "'identity' is not a usable private key"},
		{name: "garbage known_hosts", data: map[string][]byte{"identity": key.PrivateKeyPEM, "known_hosts": []byte("[127.0.0.1 nope\n")},
			msg: "'known_hosts' does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := gitauth.AuthFromSecret(mustParse(t, "ssh://git@127.0.0.1/repo.git"), tc.data, t.TempDir())
			g.Expect(err).To(MatchError(gitauth.ErrInvalidCredentials))
			g.Expect(err.Error()).To(ContainSubstring(tc.msg))
			g.Expect(gitauth.IsAuthError(err)).To(BeTrue())
		})
	}
}

func TestAuthFromSecretSSHUser(t *testing.T) {
	g := NewWithT(t)
	key := testserver.NewKeyPair(t, "")
	data := map[string][]byte{"identity": key.PrivateKeyPEM, "known_hosts": []byte("example.com " + string(key.AuthorizedKey()))}
	auth, err := gitauth.AuthFromSecret(mustParse(t, "ssh://example.com/repo.git"), data, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auth.Method.(*gitssh.PublicKeys).User).To(Equal("git"))
	auth, err = gitauth.AuthFromSecret(mustParse(t, "ssh://deploy@example.com/repo.git"), data, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auth.Method.(*gitssh.PublicKeys).User).To(Equal("deploy"))
}

func TestAuthFromSecretUnsupportedScheme(t *testing.T) {
	g := NewWithT(t)
	_, err := gitauth.AuthFromSecret(mustParse(t, "git://example.com/repo.git"), nil, t.TempDir())
	g.Expect(err).To(MatchError("unsupported URL scheme 'git'"))
}

// Against the real smart-HTTP server: the right basic credentials list the branch, none or wrong
// ones are authentication errors.
func TestAuthFromSecretBasicAuthAgainstServer(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret", BearerToken: "t0ken"})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a": "1"})
	u := mustParse(t, repo.HTTPURL())

	for _, data := range []map[string][]byte{
		{"username": []byte("bob"), "password": []byte("s3cret")},
		{"bearerToken": []byte("t0ken")},
	} {
		auth, err := gitauth.AuthFromSecret(u, data, t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(headOf(repo.HTTPURL(), auth)).To(Equal(sha))
	}
	for _, data := range []map[string][]byte{nil, {"username": []byte("bob"), "password": []byte("wrong")}} {
		auth, err := gitauth.AuthFromSecret(u, data, t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		_, err = headOf(repo.HTTPURL(), auth)
		g.Expect(err).To(HaveOccurred())
		g.Expect(gitauth.IsAuthError(err)).To(BeTrue(), err.Error())
	}
}

// HTTPS with the server's certificate as ca.crt; without it the certificate is not trusted.
func TestAuthFromSecretCABundleAgainstServer(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{TLS: true})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a": "1"})
	u := mustParse(t, repo.HTTPURL())

	auth, err := gitauth.AuthFromSecret(u, map[string][]byte{"ca.crt": srv.CAPEM()}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(headOf(repo.HTTPURL(), auth)).To(Equal(sha))

	auth, err = gitauth.AuthFromSecret(u, nil, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	_, err = headOf(repo.HTTPURL(), auth)
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))
}

// Against the real SSH server: the identity (also a passphrase-protected one) with the server's
// known_hosts works; an unknown host key or an unauthorized identity is an authentication error.
func TestAuthFromSecretSSHAgainstServer(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a": "1"})
	u := mustParse(t, repo.SSHURL())

	auth, err := gitauth.AuthFromSecret(u, map[string][]byte{
		"identity": srv.Identity().PrivateKeyPEM, "known_hosts": srv.KnownHosts(),
	}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(headOf(repo.SSHURL(), auth)).To(Equal(sha))

	// The same identity, encrypted with the Secret's `password`.
	priv, err := ssh.ParseRawPrivateKey(srv.Identity().PrivateKeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("key-pass"))
	g.Expect(err).NotTo(HaveOccurred())
	encrypted := pem.EncodeToMemory(block)
	_, err = gitauth.AuthFromSecret(u, map[string][]byte{"identity": encrypted, "known_hosts": srv.KnownHosts()}, t.TempDir())
	g.Expect(err).To(MatchError(gitauth.ErrInvalidCredentials))
	auth, err = gitauth.AuthFromSecret(u, map[string][]byte{
		"identity": encrypted, "password": []byte("key-pass"), "known_hosts": srv.KnownHosts(),
	}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(headOf(repo.SSHURL(), auth)).To(Equal(sha))

	other := testserver.NewKeyPair(t, "")
	wrongHost := []byte("[127.0.0.1]:1 " + string(other.AuthorizedKey()))
	for name, data := range map[string]map[string][]byte{
		"unknown host key": {"identity": srv.Identity().PrivateKeyPEM, "known_hosts": wrongHost},
		"unauthorized key": {"identity": other.PrivateKeyPEM, "known_hosts": srv.KnownHosts()},
	} {
		auth, err := gitauth.AuthFromSecret(u, data, t.TempDir())
		g.Expect(err).NotTo(HaveOccurred(), name)
		_, err = headOf(repo.SSHURL(), auth)
		g.Expect(err).To(HaveOccurred(), name)
		g.Expect(gitauth.IsAuthError(err)).To(BeTrue(), name+": "+err.Error())
	}
}
