// Package cosigntest signs OCI artifacts in tests with cosign's own signing code, the way
// `cosign sign --key --tlog-upload=false` does.
package cosigntest

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// KeyPair is a cosign key pair generated for a test.
type KeyPair struct {
	// Public is the PEM public key, as a `cosign.pub` file holds it.
	Public  []byte
	private []byte
}

var password = []byte("test")

// NewKeyPair generates an ECDSA P-256 key pair (cosign's default).
func NewKeyPair(t testing.TB) KeyPair {
	t.Helper()
	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return password, nil })
	if err != nil {
		t.Fatalf("generating a cosign key pair: %v", err)
	}
	return KeyPair{Public: keys.PublicBytes, private: keys.PrivateBytes}
}

// Sign signs the artifact at ref and pushes the signature to its `sha256-<hex>.sig` tag.
func (k KeyPair) Sign(t testing.TB, ref name.Digest, opts ...remote.Option) {
	t.Helper()
	k.sign(t, ref, ref, opts...)
}

// SignClaiming pushes, next to ref, a valid signature of a payload that names another
// digest: a signature moved from one artifact to another, which verification must refuse.
func (k KeyPair) SignClaiming(t testing.TB, ref, claimed name.Digest, opts ...remote.Option) {
	t.Helper()
	k.sign(t, ref, claimed, opts...)
}

// SignAnnotated signs ref with annotations in the payload's optional part (as `cosign sign
// -a key=value` does), which makes the payload as large as they are.
func (k KeyPair) SignAnnotated(t testing.TB, ref name.Digest, annotations map[string]any, opts ...remote.Option) {
	t.Helper()
	k.signPayload(t, ref, &payload.Cosign{Image: ref, Annotations: annotations}, opts...)
}

func (k KeyPair) sign(t testing.TB, ref, claimed name.Digest, opts ...remote.Option) {
	t.Helper()
	k.signPayload(t, ref, &payload.Cosign{Image: claimed}, opts...)
}

func (k KeyPair) signPayload(t testing.TB, ref name.Digest, claim *payload.Cosign, opts ...remote.Option) {
	t.Helper()
	sv, err := cosign.LoadPrivateKey(k.private, password, nil)
	if err != nil {
		t.Fatalf("loading the private key: %v", err)
	}
	body, err := claim.MarshalJSON()
	if err != nil {
		t.Fatalf("making the payload: %v", err)
	}
	sig, err := sv.SignMessage(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	ociSig, err := static.NewSignature(body, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		t.Fatalf("making the signature layer: %v", err)
	}
	ro := ociremote.WithRemoteOptions(opts...)
	se, err := ociremote.SignedEntity(ref, ro)
	if err != nil {
		t.Fatalf("reading '%s': %v", ref, err)
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		t.Fatalf("attaching the signature: %v", err)
	}
	if err := ociremote.WriteSignatures(ref.Context(), signed, ro); err != nil {
		t.Fatalf("pushing the signature of '%s': %v", ref, err)
	}
}
