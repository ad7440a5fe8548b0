package cosign_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	"github.com/sluice-gitops/sluice/shared/cosign"
	"github.com/sluice-gitops/sluice/shared/cosign/cosigntest"
)

const (
	ciIssuer  = "https://token.actions.githubusercontent.com"
	ciSubject = "release@ci.example.com"
)

// Keyless signatures verify offline against the Secret's certificate authority and log key, for
// the identities given (whole-value expressions); another identity, another issuer, another
// Sigstore and an unsigned image do not.
func TestKeylessVerifier(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	opts := reg.RemoteOptions()
	sigstore, elsewhere := cosigntest.NewSigstore(t), cosigntest.NewSigstore(t)
	trust := map[string][]byte{"fulcio.crt": sigstore.RootPEM, cosign.RekorPublicKey: sigstore.RekorPublicPEM}

	signed := push(t, reg, "apps/signed:v1", "a: 1")
	sigstore.Sign(t, signed, ciSubject, ciIssuer, opts...)
	otherIdentity := push(t, reg, "apps/other-identity:v1", "a: 2")
	sigstore.Sign(t, otherIdentity, "intruder@example.com", ciIssuer, opts...)
	otherIssuer := push(t, reg, "apps/other-issuer:v1", "a: 3")
	sigstore.Sign(t, otherIssuer, ciSubject, "https://accounts.example.com", opts...)
	otherSigstore := push(t, reg, "apps/other-sigstore:v1", "a: 4")
	elsewhere.Sign(t, otherSigstore, ciSubject, ciIssuer, opts...)
	unsigned := push(t, reg, "apps/unsigned:v1", "a: 5")

	v, err := cosign.NewKeylessVerifier(trust, []cosign.Identity{{Issuer: `https://token\.actions\.githubusercontent\.com`, Subject: `.*@ci\.example\.com`}})
	g.Expect(err).NotTo(HaveOccurred())
	who, err := v.Verify(ctx, signed, opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(who).To(Equal(ciSubject))

	for _, ref := range []name.Digest{otherIdentity, otherIssuer, otherSigstore, unsigned} {
		_, err := v.Verify(ctx, ref, opts...)
		g.Expect(errors.Is(err, cosign.ErrNotVerified)).To(BeTrue(), "%s: %v", ref, err)
	}

	// The expressions match whole values: a subject expression without .* is not a prefix.
	strict, err := cosign.NewKeylessVerifier(trust, []cosign.Identity{{Issuer: ciIssuer, Subject: "release@ci"}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = strict.Verify(ctx, signed, opts...)
	g.Expect(errors.Is(err, cosign.ErrNotVerified)).To(BeTrue(), "%v", err)

	_, err = cosign.NewKeylessVerifier(map[string][]byte{"fulcio.crt": sigstore.RootPEM}, []cosign.Identity{{Issuer: ciIssuer, Subject: ciSubject}})
	g.Expect(err).To(MatchError(cosign.ErrNoTrustRoot))
	_, err = cosign.NewKeylessVerifier(trust, nil)
	g.Expect(err).To(MatchError(ContainSubstring("at least one identity")))
	_, err = cosign.NewKeylessVerifier(trust, []cosign.Identity{{Issuer: ciIssuer, Subject: "(["}})
	g.Expect(err).To(MatchError(ContainSubstring(`identity subject "(["`)))
}
