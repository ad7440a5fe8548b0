package testserver

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// PGPKey is a generated OpenPGP key: its entity signs, ArmoredPublicKey is what a verifier
// trusts (`gpg --export --armor`).
type PGPKey struct {
	Entity           *openpgp.Entity
	ArmoredPublicKey []byte
}

// NewPGPKey generates an OpenPGP key for AuthorName and AuthorEmail, fresh in each test.
func NewPGPKey(t testing.TB) PGPKey {
	t.Helper()
	e, err := openpgp.NewEntity(AuthorName, "", AuthorEmail, nil)
	if err != nil {
		t.Fatalf("testserver: generating an OpenPGP key: %v", err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatalf("testserver: serializing the OpenPGP public key: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return PGPKey{Entity: e, ArmoredPublicKey: buf.Bytes()}
}

// CommitPGPSigned is Commit with the commit signed by key. go-git signs it, so no gpg binary
// is needed; the git CLI stages and pushes as Commit does.
func (r *Repo) CommitPGPSigned(t testing.TB, msg string, files map[string]string, key PGPKey) string {
	t.Helper()
	r.writeFiles(t, files)
	r.git(t, "add", "--all")
	repo, err := gogit.PlainOpen(r.WorkDir)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	sig := &object.Signature{Name: AuthorName, Email: AuthorEmail, When: time.Now()}
	if _, err := wt.Commit(msg, &gogit.CommitOptions{Author: sig, Committer: sig, SignKey: key.Entity, AllowEmptyCommits: true}); err != nil {
		t.Fatalf("testserver: signed commit: %v", err)
	}
	r.git(t, "push", "--quiet", "origin", "HEAD:refs/heads/"+r.CurrentBranch(t))
	return r.Head(t)
}

// TagPGPSigned makes an annotated tag of HEAD signed by key, pushes it and returns the commit
// it points to.
func (r *Repo) TagPGPSigned(t testing.TB, name string, key PGPKey) string {
	t.Helper()
	repo, err := gogit.PlainOpen(r.WorkDir)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	tagger := &object.Signature{Name: AuthorName, Email: AuthorEmail, When: time.Now()}
	if _, err := repo.CreateTag(name, head.Hash(), &gogit.CreateTagOptions{Tagger: tagger, Message: name, SignKey: key.Entity}); err != nil {
		t.Fatalf("testserver: signed tag: %v", err)
	}
	r.git(t, "push", "--quiet", "origin", "refs/tags/"+name)
	return r.Head(t)
}

// CommitSSHSigned is Commit with the commit signed by the SSH key (Git's gpg.format=ssh, which
// runs ssh-keygen -Y sign).
func (r *Repo) CommitSSHSigned(t testing.TB, msg string, files map[string]string, key KeyPair) string {
	t.Helper()
	r.writeFiles(t, files)
	r.git(t, "add", "--all")
	r.git(t, "-c", "gpg.format=ssh", "-c", "user.signingkey="+r.keyFile(t, key),
		"commit", "--quiet", "--allow-empty", "--no-verify", "-S", "-m", msg)
	r.git(t, "push", "--quiet", "origin", "HEAD:refs/heads/"+r.CurrentBranch(t))
	return r.Head(t)
}

// TagSSHSigned makes an annotated tag of HEAD signed by the SSH key, pushes it and returns the
// commit it points to.
func (r *Repo) TagSSHSigned(t testing.TB, name string, key KeyPair) string {
	t.Helper()
	r.git(t, "-c", "gpg.format=ssh", "-c", "user.signingkey="+r.keyFile(t, key), "tag", "-s", "-m", name, name)
	r.git(t, "push", "--quiet", "origin", "refs/tags/"+name)
	return r.Head(t)
}

// keyFile writes the private key where ssh-keygen reads it (owner-only, as it insists).
func (r *Repo) keyFile(t testing.TB, key KeyPair) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signing-key")
	if err := os.WriteFile(path, key.PrivateKeyPEM, 0o600); err != nil {
		t.Fatalf("testserver: %v", err)
	}
	return path
}

// writeFiles writes files into the work tree as Commit does ("" deletes).
func (r *Repo) writeFiles(t testing.TB, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			t.Fatalf("testserver: file %q must be a relative path inside the work tree", name)
		}
		path := filepath.Join(r.WorkDir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatalf("testserver: deleting %s: %v", name, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("testserver: %v", err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatalf("testserver: writing %s: %v", name, err)
		}
	}
}
