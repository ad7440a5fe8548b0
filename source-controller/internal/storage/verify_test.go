package storage

import (
	"errors"
	"os"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

func TestVerify(t *testing.T) {
	tests := []struct {
		name    string
		alg     digest.Algorithm
		tamper  func(t *testing.T, s *Storage, a *meta.Artifact)
		wantErr string
	}{
		{name: "intact sha256", alg: digest.SHA256},
		{name: "intact sha512", alg: digest.SHA512},
		{
			name: "corrupted byte",
			tamper: func(t *testing.T, s *Storage, a *meta.Artifact) {
				b, err := os.ReadFile(s.LocalPath(*a))
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 0xff
				if err := os.WriteFile(s.LocalPath(*a), b, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "has digest",
		},
		{
			name: "corrupted byte, size unknown",
			tamper: func(t *testing.T, s *Storage, a *meta.Artifact) {
				a.Size = nil
				f, err := os.OpenFile(s.LocalPath(*a), os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteAt([]byte{0}, 20); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "has digest",
		},
		{
			name: "truncated",
			tamper: func(t *testing.T, s *Storage, a *meta.Artifact) {
				if err := os.Truncate(s.LocalPath(*a), 10); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "has 10 bytes",
		},
		{
			name: "missing",
			tamper: func(t *testing.T, s *Storage, a *meta.Artifact) {
				if err := os.Remove(s.LocalPath(*a)); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "no such file",
		},
		{
			name:    "other digest",
			tamper:  func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Digest = digest.SHA256.FromString("x").String() },
			wantErr: "has digest",
		},
		{
			name:    "malformed digest",
			tamper:  func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Digest = "md5:abc" },
			wantErr: "unsupported artifact digest",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestStorage(t, Options{DigestAlgorithm: tt.alg})
			dir := t.TempDir()
			writeTree(t, dir, sampleTree)
			a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
			g.Expect(s.Archive(&a, dir, nil)).To(Succeed())
			if tt.tamper != nil {
				tt.tamper(t, s, &a)
			}
			err := s.Verify(a)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, ErrDigestMismatch)).To(BeTrue(), "%v", err)
			g.Expect(errors.Is(err, artifact.ErrDigestMismatch)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
		})
	}
}

func TestVerifyUsesTheArtifactAlgorithm(t *testing.T) {
	g := NewWithT(t)
	// Written as sha512, verified by a storage now configured for sha256.
	base := t.TempDir()
	s512 := newTestStorage(t, Options{BasePath: base, DigestAlgorithm: digest.SHA512})
	a := s512.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	g.Expect(s512.Archive(&a, dir, nil)).To(Succeed())
	g.Expect(a.Digest).To(HavePrefix("sha512:"))
	s256 := newTestStorage(t, Options{BasePath: base})
	g.Expect(s256.Verify(a)).To(Succeed())
}
