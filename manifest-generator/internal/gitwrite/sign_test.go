package gitwrite_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// gpgKey generates an OpenPGP key for the bot and returns the armored private key, encrypted
// with passphrase when one is given, and the armored public key.
func gpgKey(t *testing.T, passphrase string) (private, public []byte) {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	entity, err := openpgp.NewEntity(botName, "", botEmail, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err == nil {
		err = entity.Serialize(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if passphrase != "" {
		if err := entity.EncryptPrivateKeys([]byte(passphrase), cfg); err != nil {
			t.Fatal(err)
		}
	}
	var priv bytes.Buffer
	w, err = armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err == nil {
		err = entity.SerializePrivateWithoutSigning(w, cfg)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return priv.Bytes(), pub.Bytes()
}

// A commit signed with a passphrase-protected OpenPGP key verifies with the public key, read
// back from a fresh clone of the server.
func TestPushSignsWithGPG(t *testing.T) {
	g := NewWithT(t)
	repo, _, opts := httpRepo(t)
	private, public := gpgKey(t, "gpg-pass")
	signer, err := gitwrite.GPGSigner(private, "gpg-pass")
	g.Expect(err).NotTo(HaveOccurred())
	opts.Signer = signer

	commit, err := gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"}))
	g.Expect(err).NotTo(HaveOccurred())

	clone, err := gogit.PlainClone(t.TempDir(), false, &gogit.CloneOptions{URL: repo.Dir})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := clone.CommitObject(plumbing.NewHash(commit))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.PGPSignature).To(HavePrefix("-----BEGIN PGP SIGNATURE-----"))
	entity, err := c.Verify(string(public))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entity.PrimaryIdentity().UserId.Email).To(Equal(botEmail))

	// Another key does not verify it.
	_, otherPublic := gpgKey(t, "")
	_, err = c.Verify(string(otherPublic))
	g.Expect(err).To(HaveOccurred())
}

func TestGPGSignerErrors(t *testing.T) {
	g := NewWithT(t)
	private, public := gpgKey(t, "gpg-pass")
	_, err := gitwrite.GPGSigner(private, "")
	g.Expect(err).To(MatchError("the OpenPGP signing key is encrypted and no passphrase is given"))
	_, err = gitwrite.GPGSigner(private, "wrong-pass")
	g.Expect(err).To(MatchError("the passphrase does not decrypt the OpenPGP signing key"))
	_, err = gitwrite.GPGSigner(public, "")
	g.Expect(err).To(MatchError("the OpenPGP key ring holds no private key that can sign"))
	_, err = gitwrite.GPGSigner([]byte("not a key"), "")
	g.Expect(err).To(MatchError(ContainSubstring("not an armored OpenPGP key")))
	plain, _ := gpgKey(t, "")
	_, err = gitwrite.GPGSigner(plain, "")
	g.Expect(err).NotTo(HaveOccurred())
}

// requireSSHKeygen fails the test without ssh-keygen, which git runs to verify SSH signatures.
func requireSSHKeygen(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("ssh-keygen is needed to verify SSH commit signatures: install openssh-client (.ci/run does)")
	}
}

// Commits signed with SSH keys of each type verify with git itself (`git verify-commit` with
// gpg.format=ssh and an allowed signers file, which runs `ssh-keygen -Y verify`).
func TestPushSignsWithSSH(t *testing.T) {
	requireSSHKeygen(t)
	ecdsaKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]any{
		"ed25519": nil, // testserver's generated key
		"ecdsa":   ecdsaKey,
		"rsa":     rsaKey,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// The generated ed25519 key is plain; the others are protected by a passphrase.
			var pemKey []byte
			var pub ssh.PublicKey
			passphrase := ""
			if key == nil {
				kp := testserver.NewKeyPair(t, "")
				pemKey, pub = kp.PrivateKeyPEM, kp.PublicKey
			} else {
				passphrase = "ssh-pass"
				block, err := ssh.MarshalPrivateKeyWithPassphrase(key, "", []byte(passphrase))
				g.Expect(err).NotTo(HaveOccurred())
				pemKey = pem.EncodeToMemory(block)
				signer, err := ssh.NewSignerFromKey(key)
				g.Expect(err).NotTo(HaveOccurred())
				pub = signer.PublicKey()
			}
			signer, err := gitwrite.SSHSigner(pemKey, passphrase)
			g.Expect(err).NotTo(HaveOccurred())

			repo, _, opts := httpRepo(t)
			opts.Signer = signer
			commit, err := gitwrite.Push(context.Background(), opts, writeFiles(map[string]string{"apps/podinfo.yaml": "image: podinfo:6.1.0\n"}))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gitIn(t, repo.Dir, "cat-file", "commit", commit)).To(ContainSubstring("gpgsig -----BEGIN SSH SIGNATURE-----"))

			allowed := filepath.Join(t.TempDir(), "allowed_signers")
			g.Expect(os.WriteFile(allowed, append([]byte(botEmail+" "), ssh.MarshalAuthorizedKey(pub)...), 0o600)).To(Succeed())
			verify := []string{"-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile=" + allowed, "verify-commit", "--raw", commit}
			out, err := gitOut(repo.Dir, nil, verify...)
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(`Good "git" signature for ` + botEmail))

			// Another key is not allowed to sign.
			other := testserver.NewKeyPair(t, "")
			g.Expect(os.WriteFile(allowed, append([]byte(botEmail+" "), other.AuthorizedKey()...), 0o600)).To(Succeed())
			out, err = gitOut(repo.Dir, nil, verify...)
			g.Expect(err).To(HaveOccurred(), out)
		})
	}
}

func TestSSHSignerErrors(t *testing.T) {
	g := NewWithT(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKeyWithPassphrase(key, "", []byte("ssh-pass"))
	g.Expect(err).NotTo(HaveOccurred())
	encrypted := pem.EncodeToMemory(block)

	_, err = gitwrite.SSHSigner(encrypted, "")
	g.Expect(err).To(MatchError("the SSH signing key is encrypted and no passphrase is given"))
	_, err = gitwrite.SSHSigner(encrypted, "wrong-pass")
	g.Expect(err).To(MatchError("the passphrase does not decrypt the SSH signing key"))
	_, err = gitwrite.SSHSigner([]byte("not a key"), "")
	g.Expect(err).To(MatchError(ContainSubstring("the SSH signing key does not parse")))
	// A passphrase for a key that has none is not needed, and not an error.
	_, err = gitwrite.SSHSigner(testserver.NewKeyPair(t, "").PrivateKeyPEM, "unused")
	g.Expect(err).NotTo(HaveOccurred())
}
