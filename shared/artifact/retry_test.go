package artifact

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFetchRetriesAfterServerErrors(t *testing.T) {
	g := NewWithT(t)
	data := buildTarGz(t, file("ok", "ok"))
	var s *server
	s = serve(t, data, func(w http.ResponseWriter, _ *http.Request) {
		if s.hits.Load() <= 2 {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(data)
	})
	_, target := newTarget(t)

	err := (&Fetcher{Retries: 3}).Fetch(context.Background(), s.url(), sha256Of(data), target)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.hits.Load()).To(Equal(int32(3)))
	g.Expect(os.ReadFile(filepath.Join(target, "ok"))).To(Equal([]byte("ok")))
}

func TestFetchGivesUpAfterTheLastRetry(t *testing.T) {
	g := NewWithT(t)
	s := serve(t, nil, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	_, target := newTarget(t)

	err := (&Fetcher{Retries: 1}).Fetch(context.Background(), s.url(), sha256Of(nil), target)

	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(s.url()))
	g.Expect(s.hits.Load()).To(Equal(int32(2)), "one attempt and one retry")
	g.Expect(namesIn(t, target)).To(BeEmpty())
}

func TestFetchDoesNotRetryANotFound(t *testing.T) {
	g := NewWithT(t)
	s := serve(t, nil, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	_, target := newTarget(t)

	err := (&Fetcher{Retries: 3}).Fetch(context.Background(), s.url(), sha256Of(nil), target)

	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("404 Not Found"))
	g.Expect(err.Error()).To(ContainSubstring(s.url()))
	g.Expect(s.hits.Load()).To(Equal(int32(1)))
	g.Expect(namesIn(t, target)).To(BeEmpty())
}
