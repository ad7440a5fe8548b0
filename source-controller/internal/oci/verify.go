package oci

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	cosignsig "github.com/sigstore/cosign/v2/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature"
)

// ErrNoKeys is returned for a Secret without any `*.pub` entry.
var ErrNoKeys = errors.New("no public keys ('*.pub' entries) found")

// ErrNotVerified is returned when no trusted key verifies a signature of the artifact: it is
// unsigned, signed by another key, or its signature does not match its content.
var ErrNotVerified = errors.New("no matching signatures were found")

// KeyVerifier checks cosign signatures against a set of named public keys, offline: with keys
// there is no transparency log or certificate authority to consult.
type KeyVerifier struct {
	names     []string
	verifiers []signature.Verifier
}

// NewKeyVerifier loads every `*.pub` entry of a Secret's data (cosign's own key loader, so
// ECDSA, RSA and ed25519 PEM keys work as with `cosign verify --key`).
func NewKeyVerifier(data map[string][]byte) (*KeyVerifier, error) {
	v := &KeyVerifier{}
	for k := range data {
		if strings.HasSuffix(k, ".pub") {
			v.names = append(v.names, k)
		}
	}
	if len(v.names) == 0 {
		return nil, ErrNoKeys
	}
	sort.Strings(v.names)
	for _, k := range v.names {
		sv, err := cosignsig.LoadPublicKeyRaw(data[k], crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("public key '%s' does not load: %w", k, err)
		}
		v.verifiers = append(v.verifiers, sv)
	}
	return v, nil
}

// Verify checks the signatures of ref (pass a digest reference, so the content verified is the
// content pulled) and returns the name of the first key that verifies one.
func (v *KeyVerifier) Verify(ctx context.Context, ref name.Reference, opts ...remote.Option) (string, error) {
	var lastErr error
	for i, sv := range v.verifiers {
		_, _, err := cosign.VerifyImageSignatures(ctx, ref, &cosign.CheckOpts{
			RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(append(opts, remote.WithContext(ctx))...)},
			SigVerifier:        sv,
			ClaimVerifier:      cosign.SimpleClaimVerifier,
			IgnoreTlog:         true,
			IgnoreSCT:          true,
			Offline:            true,
		})
		if err == nil {
			return v.names[i], nil
		}
		lastErr = err
	}
	var noSigs *cosign.ErrNoSignaturesFound
	var noMatch *cosign.ErrNoMatchingSignatures
	if errors.As(lastErr, &noSigs) || errors.As(lastErr, &noMatch) {
		return "", fmt.Errorf("%w for '%s'", ErrNotVerified, ref)
	}
	return "", fmt.Errorf("verifying the signatures of '%s': %w", ref, lastErr)
}
