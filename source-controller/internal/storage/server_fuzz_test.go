package storage

import (
	"bufio"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRequestName sends request targets, as they come on the request line, to the artifact
// server's handler (in process) over a storage with links planted that lead outside it, a
// secret file next to it and an artifact still being written. Whatever the target, the secret
// and the partial artifact are never served, and a 200 serves exactly the file, inside the
// storage, that requestName named.
func FuzzRequestName(f *testing.F) {
	tmp := f.TempDir()
	secretPath := filepath.Join(tmp, "secret.txt")
	base := filepath.Join(tmp, "storage")
	objDir := filepath.Join(base, "gitrepository", "default", "app")
	setUp(f, os.MkdirAll(objDir, 0o755))
	setUp(f, os.WriteFile(secretPath, []byte(secret), 0o644))
	setUp(f, os.WriteFile(filepath.Join(objDir, "rev.tar.gz"), []byte("the artifact"), 0o644))
	setUp(f, os.WriteFile(filepath.Join(objDir, "a b.tar.gz"), []byte("the artifact with a space"), 0o644))
	setUp(f, os.WriteFile(filepath.Join(objDir, ".rev.tar.gz"+tmpInfix+"12345"), []byte("partial"), 0o644))
	setUp(f, os.Symlink("../../../../secret.txt", filepath.Join(objDir, "relative-out.tar.gz")))
	setUp(f, os.Symlink(secretPath, filepath.Join(objDir, "absolute-out.tar.gz")))
	setUp(f, os.Symlink("gitrepository/default/app/rev.tar.gz", filepath.Join(base, "latest.tar.gz")))
	setUp(f, os.Symlink("../../../..", filepath.Join(base, "up")))
	setUp(f, os.Symlink(tmp, filepath.Join(base, "abs-up")))
	// Unsigned, so that every path reaches the file system; FuzzSignedURL fuzzes the signatures.
	s, err := New(Options{BasePath: base, OpenArtifacts: true})
	setUp(f, err)
	handler := s.Handler()

	for _, target := range []string{
		"/gitrepository/default/app/rev.tar.gz",
		"/gitrepository/default/app/a%20b.tar.gz",
		"/latest.tar.gz",
		"/",
		"/gitrepository/",
		"/gitrepository/default/app/.rev.tar.gz.tmp-12345",
		"/../secret.txt",
		"/gitrepository/default/app/../../../../secret.txt",
		"/%2e%2e/secret.txt",
		"/..%2fsecret.txt",
		"/.%2e/secret.txt",
		"/..%5csecret.txt",
		"/..\\secret.txt",
		"/" + secretPath,
		"/gitrepository//" + strings.TrimPrefix(secretPath, "/"),
		"/%2F" + strings.TrimPrefix(secretPath, "/"),
		"http://storage/../secret.txt",
		"/secret.txt%00",
		"/gitrepository/default/app/relative-out.tar.gz",
		"/gitrepository/default/app/absolute-out.tar.gz",
		"/up/secret.txt",
		"/abs-up/secret.txt",
		"*",
		"/a?b=../../secret.txt",
		"/gitrepository/default/app/rev.tar.gz#x",
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
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, r)
		body := rec.Body.String()

		if strings.Contains(body, secret) || strings.Contains(body, "partial") {
			t.Fatalf("%q served %q", target, body)
		}
		name, ok := requestName(r)
		if ok && name != "" && (!fs.ValidPath(name) || strings.ContainsAny(name, "\\\x00")) {
			t.Fatalf("%q: requestName accepted %q", target, name)
		}
		switch rec.Code {
		case http.StatusOK:
			if !ok || name == "" {
				t.Fatalf("%q served with status 200, but requestName gives %q, %t", target, name, ok)
			}
			root, err := os.OpenRoot(base)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			want, err := root.ReadFile(name)
			if err != nil || string(want) != body {
				t.Fatalf("%q served %q, the file %q holds %q (%v)", target, body, name, want, err)
			}
		case http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("%q: unexpected status %d", target, rec.Code)
		}
	})
}

// setUp stops the fuzz test when setting up its fixture fails.
func setUp(f *testing.F, err error) {
	f.Helper()
	if err != nil {
		f.Fatal(err)
	}
}
