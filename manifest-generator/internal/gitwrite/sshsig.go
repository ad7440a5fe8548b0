package gitwrite

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"io"

	"golang.org/x/crypto/ssh"
)

// The SSH signature format git writes with `gpg.format=ssh` (`ssh-keygen -Y sign -n git`),
// as specified by OpenSSH's PROTOCOL.sshsig. golang.org/x/crypto/ssh signs; this file only
// frames the signature. The "git" namespace keeps a commit signature from being valid for
// anything else.
const (
	sshsigMagic     = "SSHSIG"
	sshsigVersion   = 1
	sshsigNamespace = "git"
	sshsigHash      = "sha512"
)

// sshSigner is go-git's Signer for an SSH key.
type sshSigner struct{ signer ssh.Signer }

// Sign returns the armored SSH signature of the commit's bytes.
func (s sshSigner) Sign(message io.Reader) ([]byte, error) {
	h := sha512.New()
	if _, err := io.Copy(h, message); err != nil {
		return nil, err
	}
	// What is signed: the magic, then the namespace, a reserved empty string, the hash
	// algorithm and the message's hash, each as an SSH string.
	signed := append([]byte(sshsigMagic), ssh.Marshal(struct {
		Namespace, Reserved, HashAlgorithm string
		Hash                               []byte
	}{sshsigNamespace, "", sshsigHash, h.Sum(nil)})...)

	var sig *ssh.Signature
	var err error
	if as, ok := s.signer.(ssh.AlgorithmSigner); ok && s.signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		// PROTOCOL.sshsig forbids ssh-rsa (SHA-1) signatures.
		sig, err = as.SignWithAlgorithm(rand.Reader, signed, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = s.signer.Sign(rand.Reader, signed)
	}
	if err != nil {
		return nil, err
	}

	// The signature blob: magic, version, then public key, namespace, reserved, hash algorithm
	// and the signature, as SSH strings.
	var blob bytes.Buffer
	blob.WriteString(sshsigMagic)
	_ = binary.Write(&blob, binary.BigEndian, uint32(sshsigVersion))
	blob.Write(ssh.Marshal(struct {
		PublicKey                          []byte
		Namespace, Reserved, HashAlgorithm string
		Signature                          []byte
	}{s.signer.PublicKey().Marshal(), sshsigNamespace, "", sshsigHash, ssh.Marshal(sig)}))

	return armorSSHSignature(blob.Bytes()), nil
}

// armorSSHSignature wraps the blob as ssh-keygen does: base64 in lines of 70 characters
// between the BEGIN and END SSH SIGNATURE lines.
func armorSSHSignature(blob []byte) []byte {
	const width = 70
	enc := base64.StdEncoding.EncodeToString(blob)
	var b bytes.Buffer
	b.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > width {
		b.WriteString(enc[:width] + "\n")
		enc = enc[width:]
	}
	b.WriteString(enc + "\n-----END SSH SIGNATURE-----\n")
	return b.Bytes()
}
