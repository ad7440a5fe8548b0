package cosign_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	"github.com/sluice-gitops/sluice/shared/cosign"
	"github.com/sluice-gitops/sluice/shared/cosign/cosigntest"
)

func push(t *testing.T, reg *testserver.Registry, ref, content string) name.Digest {
	digest := reg.PushArtifact(t, ref, map[string]string{"a.yaml": content}, nil)
	d, err := name.NewDigest(reg.Host() + "/" + ref[:len(ref)-len(":v1")] + "@" + digest)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestKeyVerifier(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "u", Password: "p"})
	opts := reg.RemoteOptions()
	trusted, other := cosigntest.NewKeyPair(t), cosigntest.NewKeyPair(t)

	signed := push(t, reg, "apps/signed:v1", "a: 1")
	trusted.Sign(t, signed, opts...)
	byOther := push(t, reg, "apps/other:v1", "a: 2")
	other.Sign(t, byOther, opts...)
	unsigned := push(t, reg, "apps/unsigned:v1", "a: 3")
	moved := push(t, reg, "apps/moved:v1", "a: 4")
	trusted.SignClaiming(t, moved, signed, opts...)

	v, err := cosign.NewKeyVerifier(map[string][]byte{"old.pub": other.Public, "team.pub": trusted.Public, "readme.txt": []byte("x")})
	g.Expect(err).NotTo(HaveOccurred())

	key, err := v.Verify(ctx, signed, opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key).To(Equal("team.pub"))
	key, err = v.Verify(ctx, byOther, opts...)
	g.Expect(err).NotTo(HaveOccurred(), "any trusted key verifies")
	g.Expect(key).To(Equal("old.pub"))

	onlyTeam, err := cosign.NewKeyVerifier(map[string][]byte{"team.pub": trusted.Public})
	g.Expect(err).NotTo(HaveOccurred())
	for _, ref := range []name.Digest{byOther, unsigned, moved} {
		_, err := onlyTeam.Verify(ctx, ref, opts...)
		g.Expect(errors.Is(err, cosign.ErrNotVerified)).To(BeTrue(), "%s: %v", ref, err)
		g.Expect(err.Error()).To(ContainSubstring(ref.String()))
	}

	_, err = onlyTeam.Verify(ctx, signed) // no credentials
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, cosign.ErrNotVerified)).To(BeFalse(), "a registry error is not a verification verdict: %v", err)
}

func TestNewKeyVerifierBadSecrets(t *testing.T) {
	g := NewWithT(t)
	_, err := cosign.NewKeyVerifier(map[string][]byte{"key.txt": []byte("x")})
	g.Expect(errors.Is(err, cosign.ErrNoKeys)).To(BeTrue())
	_, err = cosign.NewKeyVerifier(map[string][]byte{"broken.pub": []byte("not a key")})
	g.Expect(err).To(MatchError(ContainSubstring("public key 'broken.pub' does not load")))
}

// What a registry can make the verifier read is bounded: a payload over 64 KiB is not read (so
// its signature verifies nothing), and a signature image of more than 64 signatures is refused.
func TestKeyVerifierBounds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	opts := reg.RemoteOptions()
	trusted := cosigntest.NewKeyPair(t)
	v, err := cosign.NewKeyVerifier(map[string][]byte{"team.pub": trusted.Public})
	g.Expect(err).NotTo(HaveOccurred())

	annotated := push(t, reg, "apps/annotated:v1", "a: 1")
	trusted.SignAnnotated(t, annotated, map[string]any{"team": "platform"}, opts...)
	key, err := v.Verify(ctx, annotated, opts...)
	g.Expect(err).NotTo(HaveOccurred(), "a payload with annotations verifies")
	g.Expect(key).To(Equal("team.pub"))

	large := push(t, reg, "apps/large:v1", "a: 2")
	trusted.SignAnnotated(t, large, map[string]any{"padding": strings.Repeat("x", 70<<10)}, opts...)
	_, err = v.Verify(ctx, large, opts...)
	g.Expect(errors.Is(err, cosign.ErrNotVerified)).To(BeTrue(), "%v", err)

	many := push(t, reg, "apps/many:v1", "a: 3")
	for i := range 65 {
		trusted.SignAnnotated(t, many, map[string]any{"n": i}, opts...)
	}
	_, err = v.Verify(ctx, many, opts...)
	g.Expect(err).To(MatchError(ContainSubstring("65 signatures, at most 64 are read")))
	g.Expect(errors.Is(err, cosign.ErrNotVerified)).To(BeFalse())
}
