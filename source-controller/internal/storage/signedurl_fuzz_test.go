package storage

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSignedURL sends request targets to the artifact server's handler over a storage holding
// the artifacts of two objects in two namespaces. Whatever the target, a 200 serves exactly the
// file named after the signature, and only when the signature is the one of that file's object:
// no encoding, extra segment or reuse of one object's signature opens another object.
func FuzzSignedURL(f *testing.F) {
	base := filepath.Join(f.TempDir(), "storage")
	s, err := New(Options{BasePath: base, URLKeys: [][]byte{newKey, oldKey}})
	setUp(f, err)
	files := map[string]string{
		"gitrepository/team-a/app/rev.tar.gz": "team a's source",
		"gitrepository/team-b/app/rev.tar.gz": "team b's source",
	}
	sigs := map[string]string{} // object directory -> the signature its URLs carry
	for p, content := range files {
		setUp(f, os.MkdirAll(filepath.Join(base, filepath.Dir(p)), 0o755))
		setUp(f, os.WriteFile(filepath.Join(base, p), []byte(content), 0o644))
		sigs[path.Dir(p)] = strings.Split(s.urlFor(p), "/")[3]
	}
	setUp(f, os.Symlink("rev.tar.gz", filepath.Join(base, "gitrepository/team-a/app/latest.tar.gz")))
	setUp(f, os.Symlink("../../team-b/app/rev.tar.gz", filepath.Join(base, "gitrepository/team-a/app/b.tar.gz")))
	handler := s.Handler()

	a, b := sigs["gitrepository/team-a/app"], sigs["gitrepository/team-b/app"]
	oldA := mac(oldKey, "gitrepository/team-a/app")
	for _, target := range []string{
		"/" + a + "/gitrepository/team-a/app/rev.tar.gz",
		"/" + a + "/gitrepository/team-a/app/latest.tar.gz",
		"/" + oldA + "/gitrepository/team-a/app/rev.tar.gz",
		"/" + b + "/gitrepository/team-b/app/rev.tar.gz",
		"/" + a + "/gitrepository/team-b/app/rev.tar.gz",
		"/" + a + "/gitrepository/team-a/app/b.tar.gz",
		"/" + a + "/gitrepository/team-a/app/../../team-b/app/rev.tar.gz",
		"/" + a + "/gitrepository/team-a/app%2F..%2F..%2Fteam-b/app/rev.tar.gz",
		"/" + a + "/gitrepository/team-a/app/x/../rev.tar.gz",
		"/" + a + "//gitrepository/team-a/app/rev.tar.gz",
		"/" + a + "%2Fgitrepository/team-a/app/rev.tar.gz",
		"/" + strings.ToUpper(a) + "/gitrepository/team-a/app/rev.tar.gz",
		"/" + a + "=/gitrepository/team-a/app/rev.tar.gz",
		"/gitrepository/team-a/app/rev.tar.gz",
		"//gitrepository/team-a/app/rev.tar.gz",
		"/" + a,
		"/" + a + "/",
	} {
		f.Add(target)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if len(target) > 1024 {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: storage\r\n\r\n")))
		if err != nil {
			return // net/http's server would answer 400 before the handler
		}
		if name, ok := requestName(r); ok {
			if rel, ok := s.keys.verify(name); ok && !strings.HasSuffix(name, "/"+rel) {
				t.Fatalf("%q: verify opened %q, not the path after the signature", name, rel)
			}
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, r)
		body := rec.Body.String()
		switch rec.Code {
		case http.StatusOK:
			name, _ := requestName(r)
			sig, rel, _ := strings.Cut(name, "/")
			dir := path.Dir(rel)
			if sig != sigs[dir] && sig != mac(oldKey, dir) || files[rel] == "" && path.Base(rel) != "latest.tar.gz" {
				t.Fatalf("%q served %q without the signature of its object", target, body)
			}
			want := files[rel]
			if want == "" {
				want = files[path.Join(dir, "rev.tar.gz")]
			}
			if body != want {
				t.Fatalf("%q served %q, want %q", target, body, want)
			}
		case http.StatusBadRequest, http.StatusNotFound:
			if strings.Contains(body, "source") {
				t.Fatalf("%q: a refusal served %q", target, body)
			}
		default:
			t.Fatalf("%q: unexpected status %d", target, rec.Code)
		}
	})
}
