package artifact

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// recordingTransport remembers the last response, to tell how the server framed it.
type recordingTransport struct{ last *http.Response }

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	rt.last = resp
	return resp, err
}

func chunked(data []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		flusher := w.(http.Flusher)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 512)
			_, _ = w.Write(rest[:n])
			flusher.Flush()
			rest = rest[n:]
		}
	}
}

func TestFetchRefusesAnOversizeDownload(t *testing.T) {
	// Incompressible content, so the archive is a few KiB and takes several chunks.
	noise := make([]byte, 4096)
	_, _ = rand.Read(noise)
	data := buildTarGz(t, file("noise.bin", string(noise)))

	for name, handler := range map[string]http.HandlerFunc{
		"with Content-Length": nil,
		"chunked":             chunked(data),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := serve(t, data, handler)
			rt := &recordingTransport{}
			_, target := newTarget(t)

			f := &Fetcher{Client: &http.Client{Transport: rt}, MaxDownloadSize: int64(len(data)) - 1}
			err := f.Fetch(context.Background(), s.url(), sha256Of(data), target)

			g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(s.url()))
			g.Expect(namesIn(t, target)).To(BeEmpty())
			if handler == nil {
				g.Expect(rt.last.ContentLength).To(Equal(int64(len(data))))
			} else {
				g.Expect(rt.last.ContentLength).To(Equal(int64(-1)))
				g.Expect(rt.last.TransferEncoding).To(ConsistOf("chunked"))
			}
		})
		t.Run(name+" exactly at the limit", func(t *testing.T) {
			g := NewWithT(t)
			s := serve(t, data, handler)
			_, target := newTarget(t)

			f := &Fetcher{MaxDownloadSize: int64(len(data))}
			g.Expect(f.Fetch(context.Background(), s.url(), sha256Of(data), target)).To(Succeed())
			g.Expect(namesIn(t, target)).To(ConsistOf("noise.bin"))
		})
	}
}
