package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

const indexYAML = `apiVersion: v1
entries:
  podinfo:
  - apiVersion: v2
    name: podinfo
    version: 6.0.3
    digest: 7f2b8e3e2a4b7a0a8f6c1b5d2e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b
    urls: [podinfo-6.0.3.tgz]
  - apiVersion: v2
    name: podinfo
    version: 5.2.1
    urls: [podinfo-5.2.1.tgz]
generated: "2026-01-01T00:00:00Z"
`

// repository serves one index.yaml over a real HTTP server on loopback, with an ETag and
// Last-Modified, answering conditional GETs and checking basic auth when user is set. It
// records the requests' headers.
type repository struct {
	*httptest.Server
	mu       sync.Mutex
	body     []byte
	user     string
	password string
	status   int // answered instead of the index when not 0
	requests []http.Header
}

func newRepository(t *testing.T, body string) *repository {
	t.Helper()
	r := &repository{body: []byte(body)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *repository) etag() string {
	sum := sha256.Sum256(r.body)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

const lastModified = "Thu, 01 Jan 2026 00:00:00 GMT"

func (r *repository) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.Header.Clone())
	if req.URL.Path != "/charts/index.yaml" {
		http.NotFound(w, req)
		return
	}
	if r.user != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.password {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
	}
	if r.status != 0 {
		w.WriteHeader(r.status)
		return
	}
	w.Header().Set("ETag", r.etag())
	w.Header().Set("Last-Modified", lastModified)
	if req.Header.Get("If-None-Match") == r.etag() {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(r.body)
}

// set changes how the repository answers.
func (r *repository) set(change func(*repository)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(r)
}

func (r *repository) lastRequest() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[len(r.requests)-1]
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// The index is downloaded with its digest and validators and converts to the compact index;
// sent back, the validators get a 304 and nothing is downloaded.
func TestGetDownloadsAndConvertsTheIndex(t *testing.T) {
	g := NewWithT(t)
	repo := newRepository(t, indexYAML)
	ix, err := Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts/", MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ix.URL).To(Equal(repo.URL + "/charts/index.yaml"))
	g.Expect(ix.NotModified).To(BeFalse())
	g.Expect(ix.Digest).To(Equal(sha256Of(indexYAML)))
	g.Expect(ix.Validators).To(Equal(Validators{ETag: repo.etag(), LastModified: lastModified}))
	g.Expect(repo.lastRequest().Get("If-None-Match")).To(BeEmpty())

	compact, stats, err := ix.Compact()
	g.Expect(err).NotTo(HaveOccurred())
	defer compact.Close()
	g.Expect(stats).To(Equal(index.Stats{Charts: 1, Versions: 2}))
	v, err := index.Resolve(compact.Name(), "podinfo", "5.*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Version).To(Equal("5.2.1"))

	again, err := Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", Stored: &ix.Validators, MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(&Index{URL: repo.URL + "/charts/index.yaml", NotModified: true}))
	g.Expect(repo.lastRequest().Get("If-None-Match")).To(Equal(repo.etag()))
	g.Expect(repo.lastRequest().Get("If-Modified-Since")).To(Equal(lastModified))
}

// A 304 to a request that named no stored index is not a confirmation of anything.
func TestGetNotModifiedWithoutAStoredIndexIsAnError(t *testing.T) {
	g := NewWithT(t)
	repo := newRepository(t, indexYAML)
	repo.set(func(r *repository) { r.status = http.StatusNotModified })
	_, err := Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).To(MatchError("failed to fetch Helm repository index '" + repo.URL + "/charts/index.yaml': 304 Not Modified"))
	g.Expect(Unauthorized(err)).To(BeFalse())
}

// Basic auth is sent; refused credentials (401, 403) are told apart from other answers.
func TestGetCredentials(t *testing.T) {
	g := NewWithT(t)
	repo := newRepository(t, indexYAML)
	repo.set(func(r *repository) { r.user, r.password = "helm", "s3cret" })
	indexURL := repo.URL + "/charts/index.yaml"

	ix, err := Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", Username: "helm", Password: "s3cret", MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ix.Digest).To(Equal(sha256Of(indexYAML)))

	_, err = Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", Username: "helm", Password: "wrong", MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).To(MatchError("failed to fetch Helm repository index '" + indexURL + "': 401 Unauthorized"))
	g.Expect(Unauthorized(err)).To(BeTrue())

	repo.set(func(r *repository) { r.user = "" })
	for code, unauthorized := range map[int]bool{http.StatusForbidden: true, http.StatusInternalServerError: false, http.StatusNotFound: false} {
		repo.set(func(r *repository) { r.status = code })
		_, err = Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", MaxSize: 1 << 20}, t.TempDir())
		g.Expect(err).To(MatchError(fmt.Sprintf("failed to fetch Helm repository index '%s': %d %s", indexURL, code, http.StatusText(code))))
		g.Expect(Unauthorized(err)).To(Equal(unauthorized), "%d", code)
	}
}

// An index over MaxSize is refused with a message naming the flag; one of exactly MaxSize bytes
// is not.
func TestGetMaxSize(t *testing.T) {
	g := NewWithT(t)
	repo := newRepository(t, indexYAML)
	size := int64(len(indexYAML))
	_, err := Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", MaxSize: size - 1}, t.TempDir())
	g.Expect(err).To(MatchError(fmt.Sprintf("Helm repository index '%s/charts/index.yaml' is larger than --helm-index-max-size (%d bytes)", repo.URL, size-1)))
	_, err = Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", MaxSize: size}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
}

// A malformed index downloads (its digest is known) but does not convert.
func TestCompactMalformedIndex(t *testing.T) {
	g := NewWithT(t)
	body := "apiVersion: v1\nentries: [this is: not: valid\n"
	repo := newRepository(t, body)
	ix, err := Get(context.Background(), repo.Client(), Request{URL: repo.URL + "/charts", MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ix.Digest).To(Equal(sha256Of(body)))
	_, _, err = ix.Compact()
	g.Expect(err).To(MatchError(HavePrefix("Helm repository index '" + repo.URL + "/charts/index.yaml' is not usable: ")))
	g.Expect(errors.Is(err, index.ErrInvalidIndex)).To(BeTrue())
}

// URLs other than http(s) are refused before any request.
func TestGetInvalidURL(t *testing.T) {
	g := NewWithT(t)
	_, err := Get(context.Background(), http.DefaultClient, Request{URL: "ftp://charts.example.com", MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).To(MatchError("URL 'ftp://charts.example.com' is not an http or https URL"))
	g.Expect(errors.Is(err, ErrInvalidURL)).To(BeTrue())
}

// A repository that never answers: the context ends the download.
func TestGetContextDeadline(t *testing.T) {
	g := NewWithT(t)
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { <-req.Context().Done() }))
	defer silent.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Get(ctx, silent.Client(), Request{URL: silent.URL, MaxSize: 1 << 20}, t.TempDir())
	g.Expect(err).To(MatchError(HavePrefix("failed to fetch Helm repository index '" + silent.URL + "/index.yaml': ")))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue())
	g.Expect(Unauthorized(err)).To(BeFalse())
}
