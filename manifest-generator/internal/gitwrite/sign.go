package gitwrite

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	gogit "github.com/go-git/go-git/v5"
	"golang.org/x/crypto/ssh"
)

// Signer signs commits with an OpenPGP key (go-git's CommitOptions.SignKey) or an SSH key (the
// SSH signature format of `git -c gpg.format=ssh`, through go-git's CommitOptions.Signer).
type Signer struct {
	gpg *openpgp.Entity
	ssh ssh.Signer
}

// GPGSigner reads an armored OpenPGP private key (Flux's `git.asc`) and decrypts it with
// passphrase when it is protected. The first key of the armored key ring that can sign is used.
func GPGSigner(armoredKey []byte, passphrase string) (*Signer, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armoredKey))
	if err != nil {
		return nil, fmt.Errorf("the signing key is not an armored OpenPGP key: %w", err)
	}
	for _, entity := range ring {
		if entity.PrivateKey == nil {
			continue
		}
		if entity.PrivateKey.Encrypted {
			if passphrase == "" {
				return nil, errors.New("the OpenPGP signing key is encrypted and no passphrase is given")
			}
			if err := entity.DecryptPrivateKeys([]byte(passphrase)); err != nil {
				return nil, errors.New("the passphrase does not decrypt the OpenPGP signing key")
			}
		}
		if _, ok := entity.SigningKey(time.Now()); !ok {
			continue
		}
		return &Signer{gpg: entity}, nil
	}
	return nil, errors.New("the OpenPGP key ring holds no private key that can sign")
}

// SSHSigner reads an SSH private key (PEM or OpenSSH format), decrypting it with passphrase
// when it is protected. RSA keys sign with rsa-sha2-512.
func SSHSigner(privateKey []byte, passphrase string) (*Signer, error) {
	signer, err := ssh.ParsePrivateKey(privateKey)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, errors.New("the SSH signing key is encrypted and no passphrase is given")
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase(privateKey, []byte(passphrase))
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, errors.New("the passphrase does not decrypt the SSH signing key")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the SSH signing key does not parse: %w", err)
	}
	return &Signer{ssh: signer}, nil
}

// apply sets the signing of the commit options; a nil Signer signs nothing.
func (s *Signer) apply(o *gogit.CommitOptions) {
	switch {
	case s == nil:
	case s.gpg != nil:
		o.SignKey = s.gpg
	case s.ssh != nil:
		o.Signer = sshSigner{s.ssh}
	}
}
