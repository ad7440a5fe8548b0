package cosign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// ErrNoKeys is returned for a Secret without any `*.pub` entry.
var ErrNoKeys = errors.New("no public keys ('*.pub' entries) found")

// ErrNotVerified is returned when no trusted key verifies a signature of the artifact: it is
// unsigned, signed by another key, or its signature does not match its content.
var ErrNotVerified = errors.New("no matching signatures were found")

// The signatures cosign attaches to an artifact: an image tagged sha256-<hex>.sig in the
// artifact's repository, one layer per signature, its payload the layer's content (a simple
// signing claim naming the signed digest) and its signature in an annotation.
const (
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// maxSignatures and maxPayloadSize bound what a registry can make the controller read: a
	// signature image of many or large layers is refused, not read.
	maxSignatures  = 64
	maxPayloadSize = 64 << 10
)

// KeyVerifier checks cosign signatures against a set of named public keys, offline: with keys
// there is no transparency log or certificate authority to consult, so only the signature
// image is read (as `cosign verify --key --insecure-ignore-tlog` does).
type KeyVerifier struct {
	names     []string
	verifiers []signature.Verifier
}

// NewKeyVerifier loads every `*.pub` entry of a Secret's data: ECDSA, RSA and ed25519 PEM keys,
// as with `cosign verify --key`.
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
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(data[k])
		if err != nil {
			return nil, fmt.Errorf("public key '%s' does not load: %w", k, err)
		}
		sv, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("public key '%s' does not load: %w", k, err)
		}
		v.verifiers = append(v.verifiers, sv)
	}
	return v, nil
}

// Verify checks the signatures of ref (a digest, so the content verified is the content
// pulled) and returns the name of the first key, in name order, that verifies one: a signature
// of its payload whose claim names ref's digest.
//
// A digest reference is required, not a tag (which can move after the check): the verdict is
// then about the content that will be deployed.
func (v *KeyVerifier) Verify(ctx context.Context, ref name.Digest, opts ...remote.Option) (string, error) {
	sigs, err := readSignatures(ctx, ref, opts)
	if err != nil {
		return "", err
	}
	for i, sv := range v.verifiers {
		for _, s := range sigs {
			if sv.VerifySignature(bytes.NewReader(s.signature), bytes.NewReader(s.payload), options.WithContext(ctx)) == nil &&
				claims(s.payload, ref) {
				return v.names[i], nil
			}
		}
	}
	return "", fmt.Errorf("%w for '%s'", ErrNotVerified, ref)
}

// signed is one signature of the signature image: the payload and its signature.
type signed struct {
	payload, signature []byte
}

// readSignatures reads the signatures cosign attached to ref. None is ErrNotVerified; a failure
// to read them (the registry, the credentials) is an error that says so, not a verdict.
func readSignatures(ctx context.Context, ref name.Digest, opts []remote.Option) ([]signed, error) {
	hash := ref.DigestStr()
	algorithm, hex, ok := strings.Cut(hash, ":")
	if !ok {
		return nil, fmt.Errorf("'%s' is not a digest reference", ref)
	}
	tag := ref.Context().Tag(algorithm + "-" + hex + ".sig")
	img, err := remote.Image(tag, append(opts, remote.WithContext(ctx))...)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w for '%s': it has no signatures", ErrNotVerified, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("verifying the signatures of '%s': %w", ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("verifying the signatures of '%s': %w", ref, err)
	}
	if len(manifest.Layers) > maxSignatures {
		return nil, fmt.Errorf("verifying the signatures of '%s': %d signatures, at most %d are read", ref, len(manifest.Layers), maxSignatures)
	}
	var sigs []signed
	for _, l := range manifest.Layers {
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[signatureAnnotation])
		if err != nil || len(sig) == 0 || l.Size > maxPayloadSize {
			continue // not a signature this verifier can check
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return nil, fmt.Errorf("verifying the signatures of '%s': %w", ref, err)
		}
		payload, err := readPayload(layer.Compressed)
		if err != nil {
			return nil, fmt.Errorf("verifying the signatures of '%s': reading a signature's payload: %w", ref, err)
		}
		sigs = append(sigs, signed{payload: payload, signature: sig})
	}
	return sigs, nil
}

// readPayload reads a payload of at most maxPayloadSize bytes; go-containerregistry checks
// its digest as it is read.
func readPayload(open func() (io.ReadCloser, error)) ([]byte, error) {
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxPayloadSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPayloadSize {
		return nil, fmt.Errorf("larger than %d bytes", maxPayloadSize)
	}
	return data, nil
}

// claims: the payload is a simple signing claim for ref's digest, so a signature copied from
// another artifact verifies nothing here.
func claims(data []byte, ref name.Digest) bool {
	var claim payload.SimpleContainerImage
	if err := json.Unmarshal(data, &claim); err != nil {
		return false
	}
	return claim.Critical.Image.DockerManifestDigest == ref.DigestStr()
}
