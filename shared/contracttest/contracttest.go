// Package contracttest holds what the contract tests of the GitHub and GitLab clients share:
// their recorded exchanges (testdata/contract, each file naming the documentation page it comes
// from), a log of the requests the test server receives, and a transport that sends a client's
// requests to the test server while recording where the client meant them to go. GitHub and
// GitLab cannot be reached from the machines that run Sluice's tests (the README.md of each
// testdata/contract says so): these recorded exchanges are the one place where a stand-in
// answers for a server.
package contracttest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Fixture is one file of testdata/contract: the documentation page it comes from, the
// documented method and path, what was changed from the documented example, and the bodies of
// the consecutive pages of a listing or the body of a single answer.
type Fixture struct {
	Source   string            `json:"source"`
	Request  string            `json:"request"`
	Note     string            `json:"note"`
	Pages    []json.RawMessage `json:"pages"`
	Response json.RawMessage   `json:"response"`
}

// LoadFixture reads testdata/contract/<name>.json of the package under test, and fails the test
// when it does not name its documentation page, request and note, or holds no answer.
func LoadFixture(t *testing.T, name string) Fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "contract", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx Fixture
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !strings.HasPrefix(fx.Source, "https://docs.github.com/") && !strings.HasPrefix(fx.Source, "https://docs.gitlab.com/") {
		t.Fatalf("%s does not name the documentation page it comes from", name)
	}
	if fx.Request == "" || fx.Note == "" {
		t.Fatalf("%s lacks its request or note", name)
	}
	if len(fx.Pages) == 0 && len(fx.Response) == 0 {
		t.Fatalf("%s has neither pages nor a response", name)
	}
	return fx
}

// WriteJSON answers status with body as JSON.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// RequestLog records "METHOD path?query" of each request a test server receives.
type RequestLog struct {
	mu   sync.Mutex
	reqs []string
}

// Add records r.
func (l *RequestLog) Add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := r.Method + " " + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		line += "?" + r.URL.Query().Encode()
	}
	l.reqs = append(l.reqs, line)
}

// All are the requests recorded, in order.
func (l *RequestLog) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

// Redirect is a transport that sends every request to a test server (without Strip, a prefix of
// the path), recording the address the client meant (scheme, host and path), so that a test can
// check which API a URL selects.
type Redirect struct {
	to    *neturl.URL
	strip string
	next  http.RoundTripper
	mu    sync.Mutex
	was   []string
}

// NewRedirect sends to srv, without strip of each path.
func NewRedirect(srv *httptest.Server, strip string) *Redirect {
	to, _ := neturl.Parse(srv.URL)
	return NewRedirectTo(to, strip, srv.Client().Transport)
}

// NewRedirectTo sends to the server at to through next, without strip of each path: a real
// server (the tests' Gitea) reached under the addresses a client derives.
func NewRedirectTo(to *neturl.URL, strip string, next http.RoundTripper) *Redirect {
	return &Redirect{to: to, strip: strip, next: next}
}

func (rd *Redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	rd.mu.Lock()
	rd.was = append(rd.was, req.URL.Scheme+"://"+req.URL.Host+req.URL.EscapedPath())
	rd.mu.Unlock()
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = rd.to.Scheme, rd.to.Host, ""
	if rd.strip != "" {
		out.URL.Path = strings.TrimPrefix(out.URL.Path, rd.strip)
		out.URL.RawPath = strings.TrimPrefix(out.URL.RawPath, rd.strip)
	}
	return rd.next.RoundTrip(out)
}

// Client is a client whose requests go through the redirect.
func (rd *Redirect) Client() *http.Client { return &http.Client{Transport: rd} }

// Targets are the addresses the client meant, in order.
func (rd *Redirect) Targets() []string {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return append([]string(nil), rd.was...)
}
