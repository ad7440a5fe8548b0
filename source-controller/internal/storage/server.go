package storage

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
)

// Handler serves the artifact files under BasePath to consumers: to those who hold a signed URL
// (see signedurl.go) unless OpenArtifacts; GET and HEAD only, no directory listings, Range and
// conditional requests through http.ServeContent, and an ETag equal to the file's digest with
// the configured algorithm, i.e. status.artifact.digest. Files are opened through an os.Root of
// their directory, so `..`, absolute paths and symlinks leading outside it cannot reach anything
// else; symlinks inside it (Symlink's latest links) are followed.
func (s *Storage) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Storage) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := requestName(r)
	if !ok {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	// A missing or wrong signature is answered as a missing file, before the file is looked
	// for: nothing tells a caller whether the artifact exists.
	if s.keys != nil {
		if name, ok = s.keys.verify(name); !ok {
			http.NotFound(w, r)
			return
		}
	}
	// Hidden names are never artifacts (object names cannot start with a dot): an artifact
	// being written (".<name>.tmp-<random>", renamed into place when complete), which a partial
	// download would not match any digest of, and the URL key file.
	if name == "" || hidden(name) {
		http.NotFound(w, r)
		return
	}
	root, err := os.OpenRoot(s.BasePath)
	if err != nil {
		http.Error(w, "storage unavailable", http.StatusInternalServerError)
		return
	}
	defer root.Close()
	// Any refusal of a root (missing, escaping link, loop) is a 404: nothing tells a caller
	// what lies outside. A URL opens one object's directory, so links are followed inside it
	// only: none can lead to another object's artifacts.
	dir, err := root.OpenRoot(path.Dir(name))
	if err != nil {
		s.notHere(w, r, name, err)
		return
	}
	defer dir.Close()
	f, err := dir.Open(path.Base(name))
	if err != nil {
		s.notHere(w, r, name, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	etag, err := s.etags.get(name, fi, func() (string, error) {
		// ReadAt leaves the offset at 0 for ServeContent.
		d, err := digestOf(s.DigestAlgorithm, io.NewSectionReader(f, 0, fi.Size()))
		return d.String(), err
	})
	if err != nil {
		http.Error(w, "reading artifact failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("ETag", `"`+etag+`"`) // a digest has no '"' or '\', so it is a valid strong entity tag
	if strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz") {
		h.Set("Content-Type", "application/gzip")
	}
	http.ServeContent(w, r, path.Base(name), fi.ModTime(), f)
}

// notHere answers a request for name that the local directory refused with err: from the
// shared store when the file is missing here (another replica wrote it), else a 404.
func (s *Storage) notHere(w http.ResponseWriter, r *http.Request, name string, err error) {
	if s.Remote != nil && errors.Is(err, fs.ErrNotExist) {
		s.serveRemote(w, r, name)
		return
	}
	http.NotFound(w, r)
}

// requestName returns the request path relative to BasePath; false for paths that are not plain
// slash-separated names: `..` or `.` segments (decoded or not), empty segments, absolute or
// Windows-style paths, NUL, and percent-encoded separators, which would make the path seen here
// differ from the one a proxy or log saw.
func requestName(r *http.Request) (string, bool) {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	if raw := strings.ToLower(r.URL.RawPath); strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") {
		return "", false
	}
	name := p[1:]
	if name == "" {
		return "", true
	}
	if strings.ContainsAny(name, "\\\x00") || !fs.ValidPath(name) {
		return "", false
	}
	return name, true
}

// hidden: a segment of name starts with a dot.
func hidden(name string) bool {
	return strings.HasPrefix(name, ".") || strings.Contains(name, "/.")
}

// maxETags bounds the cache; entries of deleted artifacts are dropped when it is full.
const maxETags = 4096

// etagCache remembers the digest of each served file version, keyed by path, size and mtime, so a
// file is hashed at most once (concurrent first requests wait for the same computation).
type etagCache struct {
	mu sync.Mutex
	m  map[string]*etagEntry
}

type etagKey struct {
	size  int64
	mtime int64
}

type etagEntry struct {
	key  etagKey
	once sync.Once
	val  string
	err  error
}

func newETagCache() *etagCache { return &etagCache{m: map[string]*etagEntry{}} }

func keyOf(fi fs.FileInfo) etagKey {
	return etagKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

func (c *etagCache) entry(name string, key etagKey) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[name]
	if e == nil || e.key != key {
		if len(c.m) >= maxETags {
			// Map order is random: dropping a quarter evicts stale entries without bookkeeping.
			n := maxETags / 4
			for k := range c.m {
				delete(c.m, k)
				if n--; n == 0 {
					break
				}
			}
		}
		e = &etagEntry{key: key}
		c.m[name] = e
	}
	return e
}

func (c *etagCache) get(name string, fi fs.FileInfo, compute func() (string, error)) (string, error) {
	e := c.entry(name, keyOf(fi))
	e.once.Do(func() { e.val, e.err = compute() })
	if e.err != nil {
		c.mu.Lock()
		if c.m[name] == e {
			delete(c.m, name) // retry on the next request
		}
		c.mu.Unlock()
	}
	return e.val, e.err
}

// put records a digest computed while writing the file.
func (c *etagCache) put(name string, fi fs.FileInfo, val string) {
	e := c.entry(name, keyOf(fi))
	e.once.Do(func() { e.val = val })
}
