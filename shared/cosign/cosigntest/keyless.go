package cosigntest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Sigstore is a private Sigstore for keyless signatures in tests: a certificate authority that
// issues short-lived signing certificates for an OIDC identity (Fulcio's part) and a
// transparency log key that signs the entry timestamp of each signature (Rekor's part). What
// it makes is what `cosign sign` makes against the public instance: a signature layer with the
// certificate, its chain and the log's bundle.
type Sigstore struct {
	// RootPEM is the certificate authority's root certificate (a Secret's `fulcio.crt`);
	// RekorPublicPEM the log's public key (its `rekor.pub`).
	RootPEM, RekorPublicPEM []byte
	root                    *x509.Certificate
	rootKey, rekorKey       *ecdsa.PrivateKey
}

// The Fulcio extensions that name the token's issuer: the first (raw string) and its
// successor (DER UTF8String), both written, as Fulcio does.
var (
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

// NewSigstore makes a certificate authority and a log key.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	s := &Sigstore{rootKey: newKey(t), rekorKey: newKey(t)}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice-test-fulcio", Organization: []string{"sluice.invalid"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &s.rootKey.PublicKey, s.rootKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.root, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	s.RootPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if s.RekorPublicPEM, err = cryptoutils.MarshalPublicKeyToPEM(&s.rekorKey.PublicKey); err != nil {
		t.Fatal(err)
	}
	return s
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Sign signs the image at ref as the identity subject (an email) of the token issuer, with a
// certificate valid for ten minutes from now, recorded in the log now, and pushes the signature.
func (s *Sigstore) Sign(t testing.TB, ref name.Digest, subject, issuer string, opts ...remote.Option) {
	t.Helper()
	key := newKey(t)
	v2, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:   big.NewInt(now.UnixNano()),
		NotBefore:      now.Add(-time.Minute),
		NotAfter:       now.Add(10 * time.Minute),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses: []string{subject},
		ExtraExtensions: []pkix.Extension{
			{Id: oidIssuerV1, Value: []byte(issuer)},
			{Id: oidIssuerV2, Value: v2},
		},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.root, &key.PublicKey, s.rootKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})

	body, err := (&payload.Cosign{Image: ref}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	b64sig := base64.StdEncoding.EncodeToString(sig)

	ociSig, err := static.NewSignature(body, b64sig,
		static.WithCertChain(certPEM, s.RootPEM), static.WithBundle(s.bundle(t, digest[:], b64sig, certPEM, now)))
	if err != nil {
		t.Fatal(err)
	}
	ro := ociremote.WithRemoteOptions(opts...)
	se, err := ociremote.SignedEntity(ref, ro)
	if err != nil {
		t.Fatalf("reading '%s': %v", ref, err)
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(ref.Context(), signed, ro); err != nil {
		t.Fatalf("pushing the signature of '%s': %v", ref, err)
	}
}

// bundle is the log's record of a signature: a hashedrekord entry and its signed entry
// timestamp.
func (s *Sigstore) bundle(t testing.TB, payloadHash []byte, b64sig string, certPEM []byte, at time.Time) *cbundle.RekorBundle {
	t.Helper()
	entry, err := json.Marshal(map[string]any{
		"apiVersion": "0.0.1",
		"kind":       "hashedrekord",
		"spec": map[string]any{
			"data": map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(payloadHash)}},
			"signature": map[string]any{
				"content":   b64sig,
				"publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString(certPEM)},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&s.rekorKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	logID := sha256.Sum256(pub)
	p := cbundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(entry), IntegratedTime: at.Unix(), LogIndex: 1,
		LogID: hex.EncodeToString(logID[:])}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := jsoncanonicalizer.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(canonical)
	set, err := s.rekorKey.Sign(rand.Reader, h[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return &cbundle.RekorBundle{SignedEntryTimestamp: set, Payload: p}
}
