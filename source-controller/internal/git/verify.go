package git

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// ErrUnsigned: the commit or tag carries no signature.
var ErrUnsigned = errors.New("not signed")

// sshSignatureHeader opens the armored SSHSIG block Git writes with gpg.format=ssh.
const sshSignatureHeader = "-----BEGIN SSH SIGNATURE-----"

// sshNamespace is the namespace Git signs commits and tags in (ssh-keygen -Y sign -n git).
const sshNamespace = "git"

// Keys are the trusted public keys of a verification Secret: OpenPGP armored key rings and SSH
// public keys, from any of its values.
type Keys struct {
	rings []openpgp.EntityList
	// armored are the rings as read, for go-git's Verify.
	armored []string
	ssh     []ssh.PublicKey
}

// ParseKeys reads every value of a Secret's data as an armored OpenPGP key ring or as
// authorized_keys lines; values that are neither are ignored, but some key must be found.
func ParseKeys(data map[string][]byte) (Keys, error) {
	var k Keys
	names := make([]string, 0, len(data))
	for name := range data {
		names = append(names, name)
	}
	slices.Sort(names) // a stable order: the first key that verifies is named
	for _, name := range names {
		v := data[name]
		if ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(v)); err == nil && len(ring) > 0 {
			k.rings = append(k.rings, ring)
			k.armored = append(k.armored, string(v))
			continue
		}
		for rest := v; len(bytes.TrimSpace(rest)) > 0; {
			pub, _, _, r, err := ssh.ParseAuthorizedKey(rest)
			if err != nil {
				break
			}
			k.ssh = append(k.ssh, pub)
			rest = r
		}
	}
	if len(k.rings) == 0 && len(k.ssh) == 0 {
		return Keys{}, errors.New("no armored OpenPGP key ring or SSH public key found")
	}
	return k, nil
}

// VerifyCommit checks the signature of c against the keys, OpenPGP or SSH as it is, and names
// the key that verifies it.
func (k Keys) VerifyCommit(c *object.Commit) (string, error) {
	return k.verify(c.PGPSignature, c.EncodeWithoutSignature, c.Verify)
}

// VerifyTag checks the signature of the annotated tag t, as VerifyCommit does.
func (k Keys) VerifyTag(t *object.Tag) (string, error) {
	return k.verify(t.PGPSignature, t.EncodeWithoutSignature, t.Verify)
}

func (k Keys) verify(sig string, encode func(plumbing.EncodedObject) error, verifyPGP func(string) (*openpgp.Entity, error)) (string, error) {
	if strings.TrimSpace(sig) == "" {
		return "", ErrUnsigned
	}
	if strings.Count(sig, "-----BEGIN ") > 1 {
		return "", errors.New("more than one signature: its signer cannot be told")
	}
	if strings.HasPrefix(sig, sshSignatureHeader) {
		return k.verifySSH(sig, encode)
	}
	if len(k.rings) == 0 {
		return "", errors.New("an OpenPGP signature, and no OpenPGP key is trusted")
	}
	var last error
	for _, ring := range k.armored {
		entity, err := verifyPGP(ring)
		if err == nil {
			return "OpenPGP key " + entity.PrimaryKey.KeyIdString(), nil
		}
		last = err
	}
	return "", fmt.Errorf("no trusted OpenPGP key verifies the signature: %w", last)
}

// verifySSH checks an SSHSIG signature of the object's content without its signature, as
// `git verify-commit` does with gpg.ssh.allowedSignersFile.
func (k Keys) verifySSH(armored string, encode func(plumbing.EncodedObject) error) (string, error) {
	sig, err := sshsig.Unarmor([]byte(armored))
	if err != nil {
		return "", fmt.Errorf("the SSH signature does not parse: %w", err)
	}
	if len(k.ssh) == 0 {
		return "", errors.New("an SSH signature, and no SSH public key is trusted")
	}
	payload := &plumbing.MemoryObject{}
	if err := encode(payload); err != nil {
		return "", err
	}
	r, err := payload.Reader()
	if err != nil {
		return "", err
	}
	content, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	for _, pub := range k.ssh {
		if sshsig.Verify(bytes.NewReader(content), sig, pub, sig.HashAlgorithm, sshNamespace) == nil {
			return "SSH key " + ssh.FingerprintSHA256(pub), nil
		}
	}
	return "", fmt.Errorf("no trusted SSH key verifies the signature of key %s", ssh.FingerprintSHA256(sig.PublicKey))
}
