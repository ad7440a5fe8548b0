package testserver

import (
	"crypto/subtle"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// httpBackend runs `git http-backend` as a CGI program for each request, after checking the
// credentials when the server requires some.
type httpBackend struct {
	root               string
	username, password string
	token              string
	logf               func(format string, args ...any)
	requests           *atomic.Int64
	delay              time.Duration
}

func (h *httpBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if h.delay > 0 {
		select {
		case <-time.After(h.delay):
		case <-r.Context().Done():
			return
		}
	}
	user, ok := h.authenticate(r)
	if !ok {
		// Git clients send credentials only after a 401 that names a scheme they know, so the
		// challenge is Basic even when the server takes a bearer token.
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "the git binary is needed: install git (apt-get install git)", http.StatusInternalServerError)
		return
	}
	env := []string{
		"GIT_PROJECT_ROOT=" + h.root,
		// Serve every repository under the root without a git-daemon-export-ok file in each.
		"GIT_HTTP_EXPORT_ALL=1",
		// http-backend enables receive-pack only for an authenticated REMOTE_USER unless
		// http.receivepack is set; set it so anonymous servers accept pushes too. Passed as
		// environment configuration (git >= 2.31) so no repository needs a config change.
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.receivepack",
		"GIT_CONFIG_VALUE_0=true",
		// Only the repositories' own configuration applies, not the machine's.
		"GIT_CONFIG_NOSYSTEM=1",
	}
	if user != "" {
		env = append(env, "REMOTE_USER="+user)
	}
	// One cgi.Handler per request, since REMOTE_USER differs between requests. The client's
	// Git-Protocol header reaches http-backend as HTTP_GIT_PROTOCOL, which it reads to speak
	// protocol v2.
	handler := &cgi.Handler{
		Path:   gitPath,
		Args:   []string{"http-backend"},
		Dir:    h.root,
		Env:    env,
		Stderr: logWriter(h.logf),
	}
	handler.ServeHTTP(w, r)
}

// authenticate returns the authenticated user ("" for an anonymous server) and whether the
// request may proceed.
func (h *httpBackend) authenticate(r *http.Request) (string, bool) {
	if h.username == "" && h.token == "" {
		return "", true
	}
	if h.token != "" {
		if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(token, h.token) {
			return "bearer", true
		}
	}
	if h.username != "" {
		if user, pass, ok := r.BasicAuth(); ok && equal(user, h.username) && equal(pass, h.password) {
			return user, true
		}
	}
	return "", false
}

// equal compares credentials in constant time: a test server, but the habit costs nothing.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// logWriter sends a child's standard error to the test log.
type logWriter func(format string, args ...any)

func (l logWriter) Write(p []byte) (int, error) {
	l("%s", p)
	return len(p), nil
}
