package testserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"testing"

	"golang.org/x/crypto/ssh"
)

// KeyType is the algorithm of a generated SSH key.
type KeyType string

const (
	// KeyED25519 is the default: small keys, fast to generate, what `ssh-keygen` makes today.
	KeyED25519 KeyType = "ed25519"
	// KeyECDSA is ECDSA on P-256 (ecdsa-sha2-nistp256), for clients restricted to NIST curves.
	KeyECDSA KeyType = "ecdsa"
)

// KeyPair is a generated SSH key pair in the forms a Git client's secret holds.
type KeyPair struct {
	// PrivateKeyPEM is the unencrypted private key in OpenSSH format ("identity").
	PrivateKeyPEM []byte
	// PublicKey is the public half, for the server's authorized keys.
	PublicKey ssh.PublicKey
	// Signer signs with the private key (the server's host key, or an x/crypto/ssh client).
	Signer ssh.Signer
}

// AuthorizedKey returns the public key as an authorized_keys line ("identity.pub").
func (k KeyPair) AuthorizedKey() []byte {
	return ssh.MarshalAuthorizedKey(k.PublicKey)
}

// NewKeyPair generates a key pair of the given type (KeyED25519 when empty). Keys are made
// fresh in each test rather than checked in, so no private key lives in the repository.
func NewKeyPair(t testing.TB, typ KeyType) KeyPair {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch typ {
	case "", KeyED25519:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case KeyECDSA:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("testserver: unknown key type %q (want %q or %q)", typ, KeyED25519, KeyECDSA)
	}
	if err != nil {
		t.Fatalf("testserver: generating %s key: %v", typ, err)
	}
	signer, err := ssh.NewSignerFromSigner(priv)
	if err != nil {
		t.Fatalf("testserver: %s signer: %v", typ, err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatalf("testserver: marshaling %s private key: %v", typ, err)
	}
	return KeyPair{PrivateKeyPEM: pem.EncodeToMemory(block), PublicKey: signer.PublicKey(), Signer: signer}
}
