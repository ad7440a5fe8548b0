package storage

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

const secret = "TOP SECRET, never served"

type serverFixture struct {
	s      *Storage
	srv    *httptest.Server
	a      meta.Artifact
	data   []byte
	secret string // absolute path of a file next to BasePath
	// sig is "/<signature of a's object>", what comes before a's path in its URL path.
	sig string
}

// signed is the URL path of the file at p (relative to the storage root) with the signature
// of a's object, valid when p is a file of that object.
func (f *serverFixture) signed(p string) string {
	return f.sig + "/" + strings.TrimPrefix(p, "/")
}

func newServerFixture(t *testing.T, alg digest.Algorithm) *serverFixture {
	t.Helper()
	g := NewWithT(t)
	tmp := t.TempDir()
	secretPath := filepath.Join(tmp, "secret.txt")
	g.Expect(os.WriteFile(secretPath, []byte(secret), 0o644)).To(Succeed())
	s := newTestStorage(t, Options{BasePath: filepath.Join(tmp, "storage"), DigestAlgorithm: alg})

	src := t.TempDir()
	writeTree(t, src, sampleTree)
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.Archive(&a, src, nil)).To(Succeed())
	data, err := os.ReadFile(s.LocalPath(a))
	g.Expect(err).NotTo(HaveOccurred())

	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	sig := strings.TrimSuffix(strings.TrimPrefix(a.URL, "http://"+s.AdvAddr), "/"+a.Path)
	return &serverFixture{s: s, srv: srv, a: a, data: data, secret: secretPath, sig: sig}
}

func (f *serverFixture) get(t *testing.T, method, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// raw sends the request target byte for byte: http.Client would clean or re-encode it.
func (f *serverFixture) raw(t *testing.T, target string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: storage\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestServeArtifact(t *testing.T) {
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		t.Run(string(alg), func(t *testing.T) {
			g := NewWithT(t)
			f := newServerFixture(t, alg)
			urlPath := strings.TrimPrefix(f.a.URL, "http://"+f.s.AdvAddr)
			g.Expect(urlPath).To(Equal(f.sig + "/gitrepository/default/app/rev.tar.gz"))

			resp, body := f.get(t, http.MethodGet, urlPath, nil)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/gzip"))
			g.Expect(resp.Header.Get("Content-Length")).To(Equal(fmt.Sprint(len(f.data))))
			g.Expect(resp.Header.Get("ETag")).To(Equal(`"` + f.a.Digest + `"`))
			g.Expect(resp.Header.Get("Accept-Ranges")).To(Equal("bytes"))
			d, err := artifact.ParseDigest(f.a.Digest)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Algorithm().FromBytes(body)).To(Equal(d))

			// The consumer's own download path accepts it.
			var out strings.Builder
			g.Expect((&artifact.Fetcher{}).Download(t.Context(), f.srv.URL+urlPath, f.a.Digest, &out)).To(Succeed())
			g.Expect(out.Len()).To(Equal(len(f.data)))

			resp, body = f.get(t, http.MethodHead, urlPath, nil)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(body).To(BeEmpty())
			g.Expect(resp.ContentLength).To(Equal(int64(len(f.data))))
			g.Expect(resp.Header.Get("ETag")).To(Equal(`"` + f.a.Digest + `"`))

			resp, body = f.get(t, http.MethodGet, urlPath, map[string]string{"Range": "bytes=10-99"})
			g.Expect(resp.StatusCode).To(Equal(http.StatusPartialContent))
			g.Expect(body).To(Equal(f.data[10:100]))
			g.Expect(resp.Header.Get("Content-Range")).To(Equal(fmt.Sprintf("bytes 10-99/%d", len(f.data))))

			resp, body = f.get(t, http.MethodGet, urlPath, map[string]string{"Range": fmt.Sprintf("bytes=%d-", len(f.data)-5)})
			g.Expect(resp.StatusCode).To(Equal(http.StatusPartialContent))
			g.Expect(body).To(Equal(f.data[len(f.data)-5:]))

			resp, body = f.get(t, http.MethodGet, urlPath, map[string]string{"If-None-Match": `"` + f.a.Digest + `"`})
			g.Expect(resp.StatusCode).To(Equal(http.StatusNotModified))
			g.Expect(body).To(BeEmpty())
			resp, _ = f.get(t, http.MethodGet, urlPath, map[string]string{"If-None-Match": `"sha256:other"`})
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		})
	}
}

func TestServeETagComputedWhenNotCached(t *testing.T) {
	g := NewWithT(t)
	f := newServerFixture(t, digest.SHA384)
	// A restarted controller: same storage, empty cache.
	s := newTestStorage(t, Options{BasePath: f.s.BasePath, DigestAlgorithm: digest.SHA384})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + f.signed(f.a.Path))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.Header.Get("ETag")).To(Equal(`"` + f.a.Digest + `"`))

	// A new version of the file (other size and mtime) gets a new ETag.
	g.Expect(os.WriteFile(s.LocalPath(f.a), []byte("changed"), 0o644)).To(Succeed())
	resp, err = http.Get(srv.URL + f.signed(f.a.Path))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.Header.Get("ETag")).To(Equal(`"` + digest.SHA384.FromString("changed").String() + `"`))
}

func TestServeMethodsAndDirectories(t *testing.T) {
	f := newServerFixture(t, digest.SHA256)
	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, f.signed(f.a.Path), http.StatusMethodNotAllowed},
		{http.MethodPut, f.signed(f.a.Path), http.StatusMethodNotAllowed},
		{http.MethodDelete, f.signed(f.a.Path), http.StatusMethodNotAllowed},
		{http.MethodOptions, f.signed(f.a.Path), http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, f.sig, http.StatusNotFound},
		{http.MethodGet, f.signed("gitrepository"), http.StatusNotFound},
		{http.MethodGet, f.signed("gitrepository/"), http.StatusBadRequest},
		{http.MethodGet, f.signed("gitrepository/default/app"), http.StatusNotFound},
		{http.MethodHead, f.signed("gitrepository/default/app"), http.StatusNotFound},
		{http.MethodGet, f.signed("gitrepository/default/app/missing.tar.gz"), http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			g := NewWithT(t)
			resp, body := f.get(t, tt.method, tt.path, nil)
			g.Expect(resp.StatusCode).To(Equal(tt.want))
			if tt.want == http.StatusMethodNotAllowed {
				g.Expect(resp.Header.Get("Allow")).To(Equal("GET, HEAD"))
			}
			g.Expect(string(body)).NotTo(ContainSubstring("rev.tar.gz"), "no listing")
		})
	}
}

func TestServeRefusesTraversal(t *testing.T) {
	g := NewWithT(t)
	f := newServerFixture(t, digest.SHA256)
	base := f.s.BasePath
	// Links planted inside the storage that lead outside it.
	objDir := filepath.Dir(f.s.LocalPath(f.a))
	g.Expect(os.Symlink("../../../../secret.txt", filepath.Join(objDir, "relative-out.tar.gz"))).To(Succeed())
	g.Expect(os.Symlink(f.secret, filepath.Join(objDir, "absolute-out.tar.gz"))).To(Succeed())
	g.Expect(os.Symlink("../../../..", filepath.Join(base, "up"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Dir(base), filepath.Join(base, "abs-up"))).To(Succeed())

	targets := []string{
		"/../secret.txt",
		"/gitrepository/../../secret.txt",
		"/gitrepository/default/app/../../../../secret.txt",
		"/%2e%2e/secret.txt",
		"/%2E%2E/secret.txt",
		"/..%2fsecret.txt",
		"/..%2Fsecret.txt",
		"/%2e%2e%2fsecret.txt",
		"/gitrepository%2f..%2f..%2fsecret.txt",
		"/.%2e/secret.txt",
		"/..%5csecret.txt",
		"/..\\secret.txt",
		"/" + f.secret,
		"/gitrepository//" + strings.TrimPrefix(f.secret, "/"),
		"/%2F" + strings.TrimPrefix(f.secret, "/"),
		"http://storage/../secret.txt",
		"/./secret.txt",
		"/secret.txt%00",
		"/gitrepository/default/app/relative-out.tar.gz",
		"/gitrepository/default/app/absolute-out.tar.gz",
		"/up/secret.txt",
		"/abs-up/secret.txt",
	}
	// Control: the same raw requests do reach a legitimate artifact.
	status, body := f.raw(t, f.signed(f.a.Path))
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(body).To(Equal(string(f.data)))

	// Each target unsigned, as an open server gets it, and with the signature of the object
	// whose directory holds the links, which passes the signature check.
	open := newTestStorage(t, Options{BasePath: base, OpenArtifacts: true})
	openSrv := httptest.NewServer(open.Handler())
	defer openSrv.Close()
	openFixture := &serverFixture{s: open, srv: openSrv}
	for _, target := range targets {
		for _, tt := range []struct {
			f      *serverFixture
			target string
		}{{openFixture, target}, {f, f.sig + target}} {
			if !strings.HasPrefix(target, "/") {
				tt.target = target
			}
			status, body := tt.f.raw(t, tt.target)
			t.Logf("%-60q -> %d", tt.target, status)
			g.Expect(status).To(BeElementOf(http.StatusBadRequest, http.StatusNotFound), tt.target)
			g.Expect(body).NotTo(ContainSubstring(secret), tt.target)
		}
	}
	// The secret is really there, and would be readable through the links from outside the server.
	b, err := os.ReadFile(filepath.Join(objDir, "relative-out.tar.gz"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal(secret))
}

func TestServeSymlinkInside(t *testing.T) {
	g := NewWithT(t)
	f := newServerFixture(t, digest.SHA256)
	url, err := f.s.Symlink(f.a, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	resp, body := f.get(t, http.MethodGet, strings.TrimPrefix(url, "http://"+f.s.AdvAddr), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(Equal(f.data))
	g.Expect(resp.Header.Get("ETag")).To(Equal(`"` + f.a.Digest + `"`))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/gzip"))
}

// An artifact still being written is not served, however its name is guessed.
func TestServeRefusesTemporaryFiles(t *testing.T) {
	g := NewWithT(t)
	f := newServerFixture(t, digest.SHA256)
	dir := filepath.Dir(f.s.LocalPath(f.a))
	tmp := "." + filepath.Base(f.s.LocalPath(f.a)) + tmpInfix + "12345"
	g.Expect(os.WriteFile(filepath.Join(dir, tmp), []byte("partial"), 0o644)).To(Succeed())
	resp, body := f.get(t, http.MethodGet, f.signed(path.Join(path.Dir(f.a.Path), tmp)), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	g.Expect(string(body)).NotTo(ContainSubstring("partial"))
	// The artifact itself is.
	resp, _ = f.get(t, http.MethodGet, f.signed(f.a.Path), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// The server bounds reading requests, writing responses and idle connections.
func TestServerTimeouts(t *testing.T) {
	g := NewWithT(t)
	srv := newHTTPServer(http.NotFoundHandler())
	g.Expect(srv.ReadHeaderTimeout).To(BeNumerically(">", 0))
	g.Expect(srv.ReadTimeout).To(BeNumerically(">", 0))
	g.Expect(srv.WriteTimeout).To(BeNumerically(">=", time.Minute), "room for a large artifact")
	g.Expect(srv.IdleTimeout).To(BeNumerically(">", 0))
}

func TestRequestName(t *testing.T) {
	tests := []struct {
		target string // as sent on the request line
		want   string
		ok     bool
	}{
		{target: "/gitrepository/default/app/x.tar.gz", want: "gitrepository/default/app/x.tar.gz", ok: true},
		{target: "/", want: "", ok: true},
		{target: "/a%20b", want: "a b", ok: true},
		{target: "/..", ok: false},
		{target: "/a/../b", ok: false},
		{target: "/a/./b", ok: false},
		{target: "/a//b", ok: false},
		{target: "/a/", ok: false},
		{target: "//etc/passwd", ok: false},
		{target: "/%2e%2e", ok: false},
		{target: "/a%2Fb", ok: false},
		{target: "/a%5cb", ok: false},
		{target: "/a%00", ok: false},
		{target: "*", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			g := NewWithT(t)
			// Not through a server: the handler alone must refuse, whatever sits in front of it.
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + tt.target + " HTTP/1.1\r\nHost: x\r\n\r\n")))
			g.Expect(err).NotTo(HaveOccurred())
			name, ok := requestName(r)
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(name).To(Equal(tt.want))
		})
	}
}

func TestServeConcurrentFirstRequests(t *testing.T) {
	g := NewWithT(t)
	f := newServerFixture(t, digest.SHA256)
	s := newTestStorage(t, Options{BasePath: f.s.BasePath}) // cold ETag cache
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	etags := make(chan string, 16)
	for range cap(etags) {
		go func() {
			resp, err := http.Get(srv.URL + f.signed(f.a.Path))
			if err != nil {
				etags <- err.Error()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			etags <- resp.Header.Get("ETag")
		}()
	}
	for range cap(etags) {
		g.Expect(<-etags).To(Equal(`"` + f.a.Digest + `"`))
	}
}
