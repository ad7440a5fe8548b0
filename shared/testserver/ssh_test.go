package testserver_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// sshAuth builds go-git's SSH auth from the secret-like values: the identity PEM and a
// known_hosts file, as a controller would from `identity` and `known_hosts`.
func sshAuth(t testing.TB, identity, knownHostsLine []byte) *gitssh.PublicKeys {
	t.Helper()
	auth, err := gitssh.NewPublicKeys("git", identity, "")
	if err != nil {
		t.Fatal(err)
	}
	cb, err := gitssh.NewKnownHostsCallback(writeTemp(t, "known_hosts", knownHostsLine))
	if err != nil {
		t.Fatal(err)
	}
	auth.HostKeyCallback = cb
	return auth
}

// sshCommand is GIT_SSH_COMMAND for the git CLI: only this key and this known_hosts file, no
// user configuration, no prompts.
func sshCommand(t testing.TB, identity, knownHostsLine []byte) string {
	t.Helper()
	return fmt.Sprintf("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o UserKnownHostsFile=%s "+
		"-o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes",
		writeTemp(t, "identity", identity), writeTemp(t, "known_hosts", knownHostsLine))
}

func TestSSHServerExposesURLKnownHostsAndIdentity(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	g.Expect(repo.SSHURL()).To(Equal("ssh://git@" + srv.SSHAddr() + "/app.git"))
	g.Expect(srv.SSHAddr()).To(MatchRegexp(`^127\.0\.0\.1:\d+$`))

	_, port, err := net.SplitHostPort(srv.SSHAddr())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(srv.KnownHosts())).To(MatchRegexp(`^\[127\.0\.0\.1\]:` + port + ` ssh-ed25519 AAAA\S+\n$`))
	_, hosts, key, _, _, err := ssh.ParseKnownHosts(srv.KnownHosts())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hosts).To(Equal([]string{knownhosts.Normalize(srv.SSHAddr())}))
	g.Expect(key.Marshal()).To(Equal(srv.HostKey().Marshal()))

	id := srv.Identity()
	g.Expect(string(id.PrivateKeyPEM)).To(HavePrefix("-----BEGIN OPENSSH PRIVATE KEY-----"))
	signer, err := ssh.ParsePrivateKey(id.PrivateKeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(signer.PublicKey().Marshal()).To(Equal(id.PublicKey.Marshal()))
	g.Expect(string(id.AuthorizedKey())).To(HavePrefix("ssh-ed25519 AAAA"))
}

func TestSSHCloneWithIdentityAndKnownHosts(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "over ssh"})

	cloned, err := goGitClone(repo.SSHURL(), sshAuth(t, srv.Identity().PrivateKeyPEM, srv.KnownHosts()), nil)
	g.Expect(err).NotTo(HaveOccurred())
	head, err := cloned.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(sha))
	g.Expect(readFile(t, cloned, "a.txt")).To(Equal("over ssh"))

	dir := t.TempDir()
	env := []string{"GIT_SSH_COMMAND=" + sshCommand(t, srv.Identity().PrivateKeyPEM, srv.KnownHosts())}
	out, err := gitCLI(t, dir, env, "clone", "--quiet", repo.SSHURL(), "app")
	g.Expect(err).NotTo(HaveOccurred(), out)
	data, err := os.ReadFile(filepath.Join(dir, "app", "a.txt"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("over ssh"))

	// The CLI asks for protocol v2 through the GIT_PROTOCOL environment request.
	out, err = gitCLI(t, dir, append(env, "GIT_TRACE_PACKET=1"), "-c", "protocol.version=2", "ls-remote", repo.SSHURL())
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("version 2"))
	g.Expect(out).To(ContainSubstring(sha + "\trefs/heads/master"))
}

func TestSSHECDSAHostKeyAndExtraAuthorizedKey(t *testing.T) {
	g := NewWithT(t)
	extra := testserver.NewKeyPair(t, testserver.KeyECDSA)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true, SSHHostKey: testserver.KeyECDSA, AuthorizedKeys: []testserver.KeyPair{extra}})
	g.Expect(string(srv.KnownHosts())).To(ContainSubstring(" ecdsa-sha2-nistp256 AAAA"))
	repo := srv.NewRepo(t, "app")
	sha := repo.Commit(t, "first", map[string]string{"a.txt": "a"})

	refs, err := lsRemote(repo.SSHURL(), sshAuth(t, extra.PrivateKeyPEM, srv.KnownHosts()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", sha))
}

func TestSSHWrongKeyRefused(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "first", map[string]string{"a.txt": "a"})
	stranger := testserver.NewKeyPair(t, testserver.KeyED25519)

	_, err := goGitClone(repo.SSHURL(), sshAuth(t, stranger.PrivateKeyPEM, srv.KnownHosts()), nil)
	g.Expect(err).To(MatchError(ContainSubstring("unable to authenticate")))

	env := []string{"GIT_SSH_COMMAND=" + sshCommand(t, stranger.PrivateKeyPEM, srv.KnownHosts())}
	out, err := gitCLI(t, t.TempDir(), env, "ls-remote", repo.SSHURL())
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Permission denied (publickey)"))
}

func TestSSHUnknownHostKeyRefused(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "first", map[string]string{"a.txt": "a"})

	// known_hosts naming this host with another key: what a client sees from an impostor.
	other := testserver.NewKeyPair(t, testserver.KeyED25519)
	mismatch := []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.SSHAddr())}, other.PublicKey) + "\n")
	_, err := goGitClone(repo.SSHURL(), sshAuth(t, srv.Identity().PrivateKeyPEM, mismatch), nil)
	var keyErr *knownhosts.KeyError
	g.Expect(errors.As(err, &keyErr)).To(BeTrue(), "%v", err)
	g.Expect(keyErr.Want).NotTo(BeEmpty(), "a key mismatch, not an unknown host")

	// known_hosts without this host at all.
	elsewhere := []byte(knownhosts.Line([]string{"[127.0.0.1]:1"}, srv.HostKey()) + "\n")
	_, err = goGitClone(repo.SSHURL(), sshAuth(t, srv.Identity().PrivateKeyPEM, elsewhere), nil)
	g.Expect(errors.As(err, &keyErr)).To(BeTrue(), "%v", err)
	g.Expect(keyErr.Want).To(BeEmpty(), "an unknown host")

	env := []string{"GIT_SSH_COMMAND=" + sshCommand(t, srv.Identity().PrivateKeyPEM, mismatch)}
	out, err := gitCLI(t, t.TempDir(), env, "ls-remote", repo.SSHURL())
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("HOST IDENTIFICATION HAS CHANGED"))
}

func TestSSHPushWithGoGit(t *testing.T) {
	g := NewWithT(t)
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "first", map[string]string{"a.txt": "a"})
	auth := sshAuth(t, srv.Identity().PrivateKeyPEM, srv.KnownHosts())

	cloned, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{URL: repo.SSHURL(), Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	wt, err := cloned.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	f, err := wt.Filesystem.Create("b.txt")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.Write([]byte("b"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Close()).To(Succeed())
	_, err = wt.Add("b.txt")
	g.Expect(err).NotTo(HaveOccurred())
	sig := &object.Signature{Name: "t", Email: "t@t", When: time.Unix(1700000000, 0)}
	pushed, err := wt.Commit("b", &git.CommitOptions{Author: sig, Committer: sig})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cloned.Push(&git.PushOptions{Auth: auth})).To(Succeed())

	refs, err := lsRemote(repo.SSHURL(), auth)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/master", pushed.String()))
}

// Only upload-pack and receive-pack on repositories under the root are served: the exit status
// and message come back over the session, as from a Git host.
func TestSSHRefusesOtherCommandsAndPathsOutsideRoot(t *testing.T) {
	srv := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "first", map[string]string{"a.txt": "a"})
	// A real repository just outside the root, so a refusal is not mere absence.
	outside := filepath.Join(filepath.Dir(srv.Root()), "x.git")
	if out, err := gitCLI(t, srv.Root(), nil, "init", "--quiet", "--bare", outside); err != nil {
		t.Fatal(out)
	}
	if err := os.Symlink(outside, filepath.Join(srv.Root(), "link.git")); err != nil {
		t.Fatal(err)
	}
	client, err := ssh.Dial("tcp", srv.SSHAddr(), &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(srv.Identity().Signer)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey()),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })

	for _, tc := range []struct{ command, stderr string }{
		{"git-upload-pack '../x.git'", "path escapes the server root"},
		{"git-upload-pack '/../x.git'", "path escapes the server root"},
		{"git-receive-pack '/app.git/../../x.git'", "path escapes the server root"},
		{"git-upload-pack '/link.git'", "path escapes the server root"},
		{"git-upload-pack '~/app.git'", "not a repository path"},
		{"git-upload-pack '/missing.git'", "does not appear to be a git repository"},
		{"git-upload-archive '/app.git'", "only git-upload-pack and git-receive-pack"},
		{"sh -c id", "only git-upload-pack and git-receive-pack"},
		{"git-upload-pack '/app.git' '/app.git'", "more than one argument"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			g := NewWithT(t)
			sess, err := client.NewSession()
			g.Expect(err).NotTo(HaveOccurred())
			defer sess.Close()
			var stderr bytes.Buffer
			sess.Stderr = &stderr
			err = sess.Run(tc.command)
			var exitErr *ssh.ExitError
			g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "%v", err)
			g.Expect(exitErr.ExitStatus()).To(Equal(128))
			g.Expect(stderr.String()).To(ContainSubstring(tc.stderr))
		})
	}

	t.Run("a served path still works on the same connection", func(t *testing.T) {
		g := NewWithT(t)
		sess, err := client.NewSession()
		g.Expect(err).NotTo(HaveOccurred())
		defer sess.Close()
		// Closing stdin right away ends upload-pack after it advertised the refs.
		sess.Stdin = bytes.NewReader([]byte("0000"))
		out, err := sess.Output("git-upload-pack '/app.git'")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(out)).To(ContainSubstring("refs/heads/master"))
	})

	t.Run("a shell is refused", func(t *testing.T) {
		g := NewWithT(t)
		sess, err := client.NewSession()
		g.Expect(err).NotTo(HaveOccurred())
		defer sess.Close()
		g.Expect(sess.Shell()).NotTo(Succeed())
	})
}
