package cosign

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	sigcosign "github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/tuf"
)

// Keys of a keyless verification's Secret: the certificate authority that issues the signing
// certificates (Fulcio's root and intermediates, in `*.crt` entries) and the public key of the
// transparency log that recorded when each signature was made (Rekor's, in `rekor.pub`).
const (
	CertificatesSuffix = ".crt"
	RekorPublicKey     = "rekor.pub"
)

// ErrNoTrustRoot is returned for a keyless verification's Secret without a `*.crt` or a
// `rekor.pub`.
var ErrNoTrustRoot = errors.New("keyless verification needs the certificate authority ('*.crt' entries) and the transparency log's public key ('rekor.pub')")

// Verifier is a KeyVerifier or a KeylessVerifier: Verify returns what verified the signature
// (a key's name, or a certificate's identity), or an error matching ErrNotVerified.
type Verifier interface {
	Verify(ctx context.Context, ref name.Digest, opts ...remote.Option) (string, error)
}

// Identity is an OIDC identity a signing certificate must name: regular expressions of the
// issuer of the token it was issued for and of its subject (an email, a workflow's URL), both
// matched whole, as Flux's matchOIDCIdentity.
type Identity struct {
	Issuer, Subject string
}

// KeylessVerifier checks cosign keyless signatures offline: the signature's certificate chains to
// the Secret's certificate authority, the transparency log's signed entry (the bundle cosign
// attaches) verifies with the Secret's log key and dates the signature within the certificate's
// ten minutes, and the certificate names one of the identities. Nothing but the registry is
// contacted: the trust root is the user's, not fetched from Sigstore's TUF repository, so it
// works for a private Sigstore as for the public one (whose root and log key the user copies).
type KeylessVerifier struct {
	roots, intermediates *x509.CertPool
	rekor                *sigcosign.TrustedTransparencyLogPubKeys
	identities           []Identity
}

// NewKeylessVerifier reads the trust root of a Secret's data and the identities to accept.
func NewKeylessVerifier(data map[string][]byte, identities []Identity) (*KeylessVerifier, error) {
	if len(identities) == 0 {
		return nil, errors.New("keyless verification needs at least one identity (issuer and subject)")
	}
	for _, id := range identities {
		for what, expr := range map[string]string{"issuer": id.Issuer, "subject": id.Subject} {
			if expr == "" {
				return nil, fmt.Errorf("an identity needs an %s expression", what)
			}
			if _, err := regexp.Compile(expr); err != nil {
				return nil, fmt.Errorf("identity %s %q: %w", what, expr, err)
			}
		}
	}
	v := &KeylessVerifier{roots: x509.NewCertPool(), intermediates: x509.NewCertPool(), identities: identities}
	var names []string
	for k := range data {
		if strings.HasSuffix(k, CertificatesSuffix) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	roots := 0
	for _, k := range names {
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM(data[k])
		if err != nil || len(certs) == 0 {
			return nil, fmt.Errorf("certificates '%s' do not load: %v", k, err)
		}
		for _, c := range certs {
			if isSelfSigned(c) {
				v.roots.AddCert(c)
				roots++
			} else {
				v.intermediates.AddCert(c)
			}
		}
	}
	log := data[RekorPublicKey]
	if roots == 0 || len(log) == 0 {
		return nil, ErrNoTrustRoot
	}
	keys := sigcosign.NewTrustedTransparencyLogPubKeys()
	if err := keys.AddTransparencyLogPubKey(log, tuf.Active); err != nil {
		return nil, fmt.Errorf("public key '%s' does not load: %w", RekorPublicKey, err)
	}
	v.rekor = &keys
	return v, nil
}

func isSelfSigned(c *x509.Certificate) bool {
	return c.IsCA && c.CheckSignatureFrom(c) == nil
}

// Verify checks the keyless signatures of ref (a digest: the verdict is about the content that
// will be deployed) and returns the identity of the first certificate that verifies, as
// "<subject> (<issuer>)". The signature image is first read within the bounds of KeyVerifier
// (readSignatures): a registry cannot make cosign read a huge one.
func (v *KeylessVerifier) Verify(ctx context.Context, ref name.Digest, opts ...remote.Option) (string, error) {
	if _, err := readSignatures(ctx, ref, opts); err != nil {
		return "", err
	}
	var failures []string
	for _, id := range v.identities {
		co := &sigcosign.CheckOpts{
			RootCerts:          v.roots,
			IntermediateCerts:  v.intermediates,
			RekorPubKeys:       v.rekor,
			Identities:         []sigcosign.Identity{{IssuerRegExp: anchored(id.Issuer), SubjectRegExp: anchored(id.Subject)}},
			ClaimVerifier:      sigcosign.SimpleClaimVerifier,
			RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(append(opts, remote.WithContext(ctx))...)},
			// Offline: the bundle's signed entry timestamp stands for the log; no certificate
			// transparency log is consulted either (its key is not part of the Secret).
			Offline:   true,
			IgnoreSCT: true,
		}
		sigs, bundled, err := sigcosign.VerifyImageSignatures(ctx, ref, co)
		if err == nil && bundled && len(sigs) > 0 {
			cert, cerr := sigs[0].Cert()
			if cerr == nil && cert != nil {
				return identityOf(cert), nil
			}
			return id.Subject, nil
		}
		if err == nil {
			err = errors.New("no signature recorded in the transparency log")
		}
		failures = append(failures, err.Error())
	}
	return "", fmt.Errorf("%w for '%s': %s", ErrNotVerified, ref, strings.Join(failures, "; "))
}

// anchored makes a user's expression match a whole value, as Flux's matchOIDCIdentity does.
func anchored(expr string) string { return "^(?:" + expr + ")$" }

// identityOf names the identity of a signing certificate: its first email or URI.
func identityOf(cert *x509.Certificate) string {
	for _, e := range cert.EmailAddresses {
		return e
	}
	for _, u := range cert.URIs {
		return u.String()
	}
	return cert.Subject.String()
}
