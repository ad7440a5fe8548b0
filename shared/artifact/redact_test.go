package artifact

import (
	"context"
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// The errors of a fetch reach the consumer's conditions and events: they name the artifact, but
// never the signature of its URL, which would let whoever reads them fetch it.
func TestFetchErrorsHideTheURLSignature(t *testing.T) {
	const sig = "AbCdEfGhIjKlMnOpQrStUv"
	data := goodArchive(t)
	for name, handler := range map[string]http.HandlerFunc{
		"not found":       func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
		"digest mismatch": nil,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := serve(t, data, handler)
			_, target := newTarget(t)
			url := s.URL + "/" + sig + "/gitrepository/tenant-a/app/abc123.tar.gz"
			err := (&Fetcher{}).Fetch(context.Background(), url, sha256Of([]byte("other")), target)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(ContainSubstring(sig))
			g.Expect(err.Error()).To(ContainSubstring("/<signature>/gitrepository/tenant-a/app/abc123.tar.gz"))
			if handler == nil {
				g.Expect(errors.Is(err, ErrDigestMismatch)).To(BeTrue(), "the error still says what it is")
			}
		})
	}
}
