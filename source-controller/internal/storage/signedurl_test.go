package storage

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	oldKey = []byte("old-key-0123456789abcdef0123456789abcdef")
	newKey = []byte("new-key-0123456789abcdef0123456789abcdef")
)

// storeIn stores content as the artifact rev.tar.gz of the GitRepository namespace/name, with
// its latest.tar.gz link, and returns the artifact and the link's URL.
func storeIn(t *testing.T, s *Storage, namespace, name, content string) (meta.Artifact, string) {
	t.Helper()
	g := NewWithT(t)
	a := s.NewArtifactFor("GitRepository", &metav1.ObjectMeta{Namespace: namespace, Name: name}, "rev", "rev.tar.gz")
	g.Expect(s.Copy(&a, strings.NewReader(content))).To(Succeed())
	latest, err := s.Symlink(a, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	return a, latest
}

// fetch GETs the path and query of rawURL from the server srv, whatever host rawURL names.
func fetch(t *testing.T, srv *httptest.Server, rawURL string) (int, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + u.EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// statusOf is the status fetch answers.
func statusOf(t *testing.T, srv *httptest.Server, rawURL string) int {
	status, _ := fetch(t, srv, rawURL)
	return status
}

// A URL opens the artifacts of its own object only: not without its signature, not with a
// changed one, and not another object's, in another namespace or the same.
func TestSignedURLs(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{AdvAddr: "sc:80", URLKeys: [][]byte{oldKey}})
	a, latest := storeIn(t, s, "team-a", "app", "team a's source")
	b, _ := storeIn(t, s, "team-b", "app", "team b's source")
	storeIn(t, s, "team-a", "app2", "team a's other source")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	g.Expect(a.URL).To(MatchRegexp(`^http://sc:80/[A-Za-z0-9_-]{22}/gitrepository/team-a/app/rev\.tar\.gz$`))
	g.Expect(latest).To(Equal(strings.TrimSuffix(a.URL, "rev.tar.gz")+"latest.tar.gz"), "one signature per object")
	g.Expect(a.Path).To(Equal("gitrepository/team-a/app/rev.tar.gz"), "the path stays Flux's")
	for u, want := range map[string]string{a.URL: "team a's source", latest: "team a's source", b.URL: "team b's source"} {
		status, body := fetch(t, srv, u)
		g.Expect(status).To(Equal(http.StatusOK), u)
		g.Expect(body).To(Equal(want), u)
	}

	sig := strings.Split(strings.TrimPrefix(a.URL, "http://sc:80/"), "/")[0]
	flipped := string(sig[0]^1) + sig[1:]
	// What a refusal answers is what a missing file answers: nothing tells whether it exists.
	missingStatus, missingBody := fetch(t, srv, "/"+sig+"/gitrepository/team-a/app/missing.tar.gz")
	g.Expect(missingStatus).To(Equal(http.StatusNotFound))
	for _, p := range []string{
		"/gitrepository/team-a/app/rev.tar.gz",                 // unsigned
		"/" + flipped + "/gitrepository/team-a/app/rev.tar.gz", // mis-signed
		"/" + sig[:21] + "/gitrepository/team-a/app/rev.tar.gz",
		"/" + sig + "x/gitrepository/team-a/app/rev.tar.gz",
		"/" + sig + "/gitrepository/team-b/app/rev.tar.gz",     // another namespace
		"/" + sig + "/gitrepository/team-b/app/latest.tar.gz",  // another namespace's link
		"/" + sig + "/gitrepository/team-a/app2/rev.tar.gz",    // another object of the namespace
		"/" + sig + "/helmchart/team-a/app/rev.tar.gz",         // another kind
		"/" + sig + "/gitrepository/team-a/app/sub/rev.tar.gz", // not an artifact path
		"/" + sig + "/gitrepository/team-a/app/../app2/rev.tar.gz",
		"/" + sig,
		"/" + sig + "/" + GeneratedURLKeyFile,
	} {
		status, body := fetch(t, srv, p)
		g.Expect(status).To(BeElementOf(http.StatusNotFound, http.StatusBadRequest), p)
		g.Expect(body).NotTo(ContainSubstring("source"), p)
		if status == http.StatusNotFound {
			g.Expect(body).To(Equal(missingBody), p)
		}
	}
}

// Rotation: a new key verifies while it is second; once first, it signs, and URLs signed with
// the old key still open until the old key is removed.
func TestSignedURLRotation(t *testing.T) {
	g := NewWithT(t)
	base := filepath.Join(t.TempDir(), "storage")
	before := newTestStorage(t, Options{BasePath: base, URLKeys: [][]byte{oldKey}})
	a, _ := storeIn(t, before, "default", "app", "the source")
	oldURL := a.URL

	step := func(keys ...[]byte) (*Storage, *httptest.Server) {
		s := newTestStorage(t, Options{BasePath: base, URLKeys: keys})
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return s, srv
	}

	// 1. The new key is added second: the old one still signs, both verify.
	s, srv := step(oldKey, newKey)
	resigned := a
	s.SetArtifactURL(&resigned)
	g.Expect(resigned.URL).To(Equal(oldURL))
	g.Expect(statusOf(t, srv, oldURL)).To(Equal(http.StatusOK))
	// A replica already on step 2 signs with the new key: this one verifies its URLs too.
	s2, _ := step(newKey, oldKey)
	s2.SetArtifactURL(&resigned)
	newURL := resigned.URL
	g.Expect(newURL).NotTo(Equal(oldURL), "re-signed with the new first key")
	g.Expect(statusOf(t, srv, newURL)).To(Equal(http.StatusOK))

	// 2. The new key moves first: it signs; URLs of the old key keep working.
	s, srv = step(newKey, oldKey)
	resigned = a
	s.SetArtifactURL(&resigned)
	g.Expect(resigned.URL).To(Equal(newURL))
	g.Expect(s.LinkURL(a, "latest.tar.gz")).To(Equal(strings.TrimSuffix(newURL, "rev.tar.gz") + "latest.tar.gz"))
	g.Expect(statusOf(t, srv, oldURL)).To(Equal(http.StatusOK))
	g.Expect(statusOf(t, srv, newURL)).To(Equal(http.StatusOK))

	// 3. The old key is removed: its URLs are refused.
	_, srv = step(newKey)
	g.Expect(statusOf(t, srv, newURL)).To(Equal(http.StatusOK))
	g.Expect(statusOf(t, srv, oldURL)).To(Equal(http.StatusNotFound))
}

// Without keys, a key is generated into the storage, private to the controller, kept across
// restarts, never served and never garbage-collected.
func TestGeneratedURLKey(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{RetentionRecords: 1})
	keyFile := filepath.Join(s.BasePath, GeneratedURLKeyFile)
	fi, err := os.Stat(keyFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	key, err := os.ReadFile(keyFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(strings.TrimSpace(string(key)))).To(BeNumerically(">=", MinURLKeySize))

	a, _ := storeIn(t, s, "default", "app", "the source")
	g.Expect(a.URL).To(MatchRegexp(`/[A-Za-z0-9_-]{22}/gitrepository/default/app/rev\.tar\.gz$`), "signed")
	restarted := newTestStorage(t, Options{BasePath: s.BasePath})
	again := a
	restarted.SetArtifactURL(&again)
	g.Expect(again.URL).To(Equal(a.URL), "a restart keeps the key")
	g.Expect(newTestStorage(t, Options{}).LinkURL(a, "rev.tar.gz")).NotTo(Equal(a.URL), "another storage, another key")

	for _, open := range []bool{false, true} {
		srv := httptest.NewServer(newTestStorage(t, Options{BasePath: s.BasePath, OpenArtifacts: open}).Handler())
		status, body := fetch(t, srv, "/"+GeneratedURLKeyFile)
		srv.Close()
		g.Expect(status).To(Equal(http.StatusNotFound))
		g.Expect(body).NotTo(ContainSubstring(strings.TrimSpace(string(key))))
	}

	b := s.NewArtifactFor("GitRepository", testObject("app"), "rev2", "rev2.tar.gz")
	g.Expect(s.Copy(&b, strings.NewReader("next"))).To(Succeed())
	_, err = s.GarbageCollect(t.Context(), b, 0)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.RemoveAll(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.ReadFile(keyFile)).To(Equal(key))
}

// --insecure-open-artifacts: Flux's unsigned URLs, served to anyone.
func TestOpenArtifacts(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{AdvAddr: "sc:80", OpenArtifacts: true})
	a, latest := storeIn(t, s, "default", "app", "the source")
	g.Expect(a.URL).To(Equal("http://sc:80/gitrepository/default/app/rev.tar.gz"))
	g.Expect(latest).To(Equal("http://sc:80/gitrepository/default/app/latest.tar.gz"))
	g.Expect(filepath.Join(s.BasePath, GeneratedURLKeyFile)).NotTo(BeAnExistingFile())
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	g.Expect(statusOf(t, srv, a.URL)).To(Equal(http.StatusOK))

	_, err := New(Options{BasePath: t.TempDir(), OpenArtifacts: true, URLKeys: [][]byte{oldKey}})
	g.Expect(err).To(MatchError(ContainSubstring("open artifacts take no URL keys")))
	_, err = New(Options{BasePath: t.TempDir(), URLKeys: [][]byte{[]byte("short")}})
	g.Expect(err).To(MatchError(ContainSubstring("shorter than 32 bytes")))
}

func TestReadURLKeys(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
		wantErr string
	}{
		{name: "one", content: string(oldKey) + "\n", want: []string{string(oldKey)}},
		{name: "rotation", content: "# new first\n" + string(newKey) + "\n\n  " + string(oldKey) + "  \r\n",
			want: []string{string(newKey), string(oldKey)}},
		{name: "no final newline", content: string(oldKey), want: []string{string(oldKey)}},
		{name: "empty", content: "\n# nothing\n", wantErr: "no key"},
		{name: "short", content: string(oldKey) + "\nshort-secret\n", wantErr: "the key of line 2 is shorter than 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			file := filepath.Join(t.TempDir(), "keys")
			g.Expect(os.WriteFile(file, []byte(tt.content), 0o600)).To(Succeed())
			keys, err := ReadURLKeys(file)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("short-secret"), "never the key")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, k := range keys {
				got = append(got, string(k))
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
	_, err := ReadURLKeys(filepath.Join(t.TempDir(), "missing"))
	NewWithT(t).Expect(err).To(MatchError(os.ErrNotExist))
}
