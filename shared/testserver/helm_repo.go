package testserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// HelmRepoOptions configure NewHelmRepository. The zero value is an anonymous plain-HTTP
// repository.
type HelmRepoOptions struct {
	// Username and Password, when Username is set, require HTTP basic auth on every path.
	Username, Password string
	// TLS serves HTTPS with httptest's certificate for 127.0.0.1; CAPEM returns it.
	TLS bool
}

// HelmRepository is a Helm HTTP chart repository: a directory of packaged charts and an
// index.yaml, served by net/http on loopback the way a static web server (GitHub Pages, S3,
// nginx) serves one, conditional GETs included, since the controllers' index caching depends
// on them.
type HelmRepository struct {
	root string
	srv  *httptest.Server
	// mu serialises AddChart and WriteIndex, which rewrite index.yaml.
	mu sync.Mutex

	statsMu     sync.Mutex
	requests    map[string]int
	notModified map[string]int
	// etags caches each file's ETag by path, valid while the file's size and mtime are the
	// same: hashing a 50 MiB index on every request would dominate a benchmark.
	etags map[string]etagEntry
}

type etagEntry struct {
	size    int64
	modTime time.Time
	etag    string
}

// NewHelmRepository starts an empty repository (an index.yaml with no entries) on loopback.
// It is stopped and its directory removed by t.Cleanup.
func NewHelmRepository(t testing.TB, opts HelmRepoOptions) *HelmRepository {
	t.Helper()
	r := &HelmRepository{
		root:        t.TempDir(),
		requests:    map[string]int{},
		notModified: map[string]int{},
		etags:       map[string]etagEntry{},
	}
	r.srv = httptest.NewUnstartedServer(&helmHandler{repo: r, username: opts.Username, password: opts.Password})
	// Server errors (a client refusing the test certificate) go to the test log, not stderr.
	r.srv.Config.ErrorLog = log.New(logWriter(cleanupSafeLogf(t)), "", 0)
	if opts.TLS {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeIndexLocked(t)
	return r
}

// URL is the repository's base URL without a trailing slash; the index is URL()+"/index.yaml".
func (r *HelmRepository) URL() string { return r.srv.URL }

// Root is the directory served: index.yaml and the <name>-<version>.tgz archives. A test may
// drop other files there (a corrupt archive); they are served like the rest.
func (r *HelmRepository) Root() string { return r.root }

// CAPEM is the PEM certificate of the HTTPS server, to trust as "ca.crt"; nil without TLS.
func (r *HelmRepository) CAPEM() []byte {
	if r.srv.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// AddChart packages the chart into the repository's root with Helm's chartutil.Save and
// regenerates index.yaml from every archive there with Helm's repo.IndexDirectory, with
// absolute URLs under URL(). It returns the archive's path. An index written with WriteIndex
// is replaced.
func (r *HelmRepository) AddChart(t testing.TB, c ChartSpec) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	archive := filepath.Join(r.root, c.Name+"-"+c.Version+".tgz")
	prev := modTime(archive)
	archive = PackageChart(t, r.root, c)
	bumpModTime(t, archive, prev)
	r.writeIndexLocked(t)
	return archive
}

// WriteIndex replaces index.yaml with data, which need not be valid (malformed or huge
// indexes); the next AddChart regenerates it.
func (r *HelmRepository) WriteIndex(t testing.TB, data []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaceIndexLocked(t, func(tmp *os.File) error {
		_, err := tmp.Write(data)
		return err
	})
}

// WriteIndexFrom is WriteIndex for an index produced by a writer (WriteLargeIndex), streamed to
// disk instead of held in memory.
func (r *HelmRepository) WriteIndexFrom(t testing.TB, write func(io.Writer) error) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaceIndexLocked(t, func(tmp *os.File) error { return write(tmp) })
}

// Requests is how many GET requests path ("/index.yaml" or "index.yaml") received, whatever
// the answer (401 and 304 included).
func (r *HelmRepository) Requests(path string) int {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	return r.requests[urlPath(path)]
}

// NotModified is how many of the GET requests to path were answered 304 Not Modified.
func (r *HelmRepository) NotModified(path string) int {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	return r.notModified[urlPath(path)]
}

func urlPath(p string) string {
	return "/" + strings.TrimPrefix(p, "/")
}

// writeIndexLocked regenerates index.yaml from the archives in the root.
func (r *HelmRepository) writeIndexLocked(t testing.TB) {
	t.Helper()
	index, err := repo.IndexDirectory(r.root, r.URL())
	if err != nil {
		t.Fatalf("testserver: indexing %s: %v", r.root, err)
	}
	// IndexDirectory leaves the entries unsorted; `helm repo index` sorts them, newest first.
	index.SortEntries()
	dest := filepath.Join(r.root, "index.yaml")
	prev := modTime(dest)
	// IndexFile.WriteFile writes through a temporary file and a rename, like replaceIndexLocked.
	if err := index.WriteFile(dest, 0o644); err != nil {
		t.Fatalf("testserver: writing index.yaml: %v", err)
	}
	bumpModTime(t, dest, prev)
}

// replaceIndexLocked writes the new index to a temporary file and renames it over index.yaml,
// so a request being served never sees a half-written index.
func (r *HelmRepository) replaceIndexLocked(t testing.TB, write func(*os.File) error) {
	t.Helper()
	dest := filepath.Join(r.root, "index.yaml")
	prev := modTime(dest)
	// Not named *.tgz or index.yaml, so IndexDirectory and clients never see it.
	tmp, err := os.CreateTemp(r.root, ".index-*.tmp")
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		t.Fatalf("testserver: writing index.yaml: %v", err)
	}
	bumpModTime(t, dest, prev)
}

// modTime is the file's modification time, zero when it does not exist.
func modTime(name string) time.Time {
	fi, err := os.Stat(name)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// bumpModTime makes a rewritten file's mtime fall in a later second than prev. Last-Modified
// and If-Modified-Since have one-second resolution: without this, an index rewritten in the
// same second as the previous one would be answered 304 to a client holding the old one. The
// mtime may run up to a few seconds ahead of the clock in a test that rewrites fast.
func bumpModTime(t testing.TB, name string, prev time.Time) {
	t.Helper()
	if prev.IsZero() {
		return
	}
	next := prev.Truncate(time.Second).Add(time.Second)
	if now := time.Now(); now.After(next) {
		next = now
	}
	if err := os.Chtimes(name, next, next); err != nil {
		t.Fatalf("testserver: %v", err)
	}
}

// helmHandler serves the repository's files with conditional GET support.
type helmHandler struct {
	repo               *HelmRepository
	username, password string
}

func (h *helmHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p := path.Clean("/" + req.URL.Path)
	if req.Method == http.MethodGet {
		h.repo.count(p, false)
	}
	if h.username != "" {
		user, pass, ok := req.BasicAuth()
		if !ok || !equal(user, h.username) || !equal(pass, h.password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="helm"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// os.OpenInRoot refuses paths escaping the root, symlinks included.
	f, err := os.OpenInRoot(h.repo.root, strings.TrimPrefix(p, "/"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			http.NotFound(w, req)
			return
		}
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, req)
		return
	}
	etag, err := h.repo.etag(p, f, fi)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// A strong ETag: http.ServeContent answers If-None-Match with it (and gives it precedence
	// over If-Modified-Since, as RFC 9110 says), and If-Modified-Since with the mtime.
	w.Header().Set("ETag", etag)
	switch path.Ext(p) {
	case ".yaml", ".yml":
		w.Header().Set("Content-Type", "application/x-yaml")
	case ".tgz":
		w.Header().Set("Content-Type", "application/gzip")
	}
	rec := &statusRecorder{ResponseWriter: w}
	http.ServeContent(rec, req, fi.Name(), fi.ModTime(), f)
	if req.Method == http.MethodGet && rec.status == http.StatusNotModified {
		h.repo.count(p, true)
	}
}

func (r *HelmRepository) count(p string, notModified bool) {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	if notModified {
		r.notModified[p]++
	} else {
		r.requests[p]++
	}
}

// etag returns the quoted hex SHA-256 of the open file, from the cache when its size and mtime
// have not changed.
func (r *HelmRepository) etag(p string, f *os.File, fi fs.FileInfo) (string, error) {
	r.statsMu.Lock()
	e, ok := r.etags[p]
	r.statsMu.Unlock()
	if ok && e.size == fi.Size() && e.modTime.Equal(fi.ModTime()) {
		return e.etag, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	etag := `"` + hex.EncodeToString(h.Sum(nil)) + `"`
	r.statsMu.Lock()
	r.etags[p] = etagEntry{size: fi.Size(), modTime: fi.ModTime(), etag: etag}
	r.statsMu.Unlock()
	return etag, nil
}

// statusRecorder remembers the status code written, to count 304 answers.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
