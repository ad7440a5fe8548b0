package artifact

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"
)

func TestParseDigestAcceptsTheSourceControllerAlgorithms(t *testing.T) {
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA384, digest.SHA512} {
		t.Run(string(alg), func(t *testing.T) {
			g := NewWithT(t)
			want := alg.FromString("artifact")
			got, err := ParseDigest(want.String())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want))
		})
	}
}

func TestFetchRefusesAnUnsupportedOrMalformedDigest(t *testing.T) {
	for name, d := range map[string]string{
		"md5":                       "md5:d41d8cd98f00b204e9800998ecf8427e",
		"sha1":                      "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"no algorithm":              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"sha256 too short":          "sha256:e3b0c442",
		"sha256 not hex":            "sha256:" + strings.Repeat("z", 64),
		"sha256 upper-case":         "sha256:" + strings.Repeat("A", 64),
		"sha512 with sha256 length": "sha512:" + strings.Repeat("a", 64),
		"empty":                     "",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			data := buildTarGz(t, file("a", "a"))
			s := serve(t, data, nil)
			_, target := newTarget(t)

			err := (&Fetcher{}).Fetch(context.Background(), s.url(), d, target)

			g.Expect(errors.Is(err, ErrUnsupportedDigest)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("'" + d + "'"))
			g.Expect(s.hits.Load()).To(BeZero(), "the digest is checked before downloading")
			g.Expect(namesIn(t, target)).To(BeEmpty())
		})
	}
}
