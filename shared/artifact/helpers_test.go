package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
)

// entry is one member of a crafted tarball.
type entry struct {
	name     string
	typ      byte // tar.TypeReg when zero
	body     string
	linkname string
	mode     int64 // 0o644 when zero
}

func file(name, body string) entry { return entry{name: name, typ: tar.TypeReg, body: body} }

func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }

func symlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, linkname: target}
}

func hardlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeLink, linkname: target}
}

// buildTarGz writes entries, in order, as a gzipped tarball.
func buildTarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:     e.name,
			Typeflag: e.typ,
			Linkname: e.linkname,
			Mode:     e.mode,
			Format:   tar.FormatPAX,
		}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatalf("tar body %q: %v", e.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipBytes gzips raw bytes (used to wrap a corrupt tar stream in a valid gzip stream).
func gzipBytes(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha256Of(data []byte) string { return digest.SHA256.FromBytes(data).String() }

// server is a real loopback HTTP server counting the requests it answered.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

// serve starts a server answering every request with handler, or with data when handler is nil.
func serve(t testing.TB, data []byte, handler http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	if handler == nil {
		handler = func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			_, _ = w.Write(data)
		}
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// url is the artifact URL on the server; its path looks like the source-controller's.
func (s *server) url() string { return s.URL + "/gitrepository/flux-system/podinfo/abc123.tar.gz" }

// newTarget returns an empty target directory and its parent, which must stay untouched
// by every extraction, so a test can tell that nothing escaped.
func newTarget(t *testing.T) (parent, target string) {
	t.Helper()
	parent = t.TempDir()
	target = filepath.Join(parent, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	return parent, target
}

// namesIn lists the names in a directory.
func namesIn(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// fetchArchive serves data on a real server and fetches it, with its correct sha256 digest,
// into a fresh target. It returns the artifact URL, the parent, the target and the error.
func fetchArchive(t *testing.T, data []byte, limits Limits) (url, parent, target string, err error) {
	t.Helper()
	s := serve(t, data, nil)
	parent, target = newTarget(t)
	f := &Fetcher{Limits: limits}
	err = f.Fetch(context.Background(), s.url(), sha256Of(data), target)
	return s.url(), parent, target, err
}
