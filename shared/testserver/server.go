package testserver

import (
	"encoding/pem"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Options configure NewGitServer. The zero value is an anonymous plain-HTTP server.
type Options struct {
	// Username and Password, when Username is set, require HTTP basic auth.
	Username, Password string
	// BearerToken, when set, requires `Authorization: Bearer <token>`. With basic auth set too,
	// either credential is accepted.
	BearerToken string
	// TLS serves HTTPS with httptest's certificate for 127.0.0.1; CAPEM returns it.
	TLS bool
	// SSH also starts the SSH server for the same root.
	SSH bool
	// SSHHostKey is the host key's type (KeyED25519 when empty).
	SSHHostKey KeyType
	// AuthorizedKeys are the public keys the SSH server accepts besides Identity's.
	AuthorizedKeys []KeyPair
	// Delay is added before each HTTP request is served: a busy or distant Git server, where
	// a client's speed depends on how many requests it makes.
	Delay time.Duration
}

// GitServer serves the bare repositories under Root over HTTP(S), and over SSH when asked.
type GitServer struct {
	root string
	http *httptest.Server
	ssh  *sshServer // nil without Options.SSH
	// identity is the generated client key the SSH server authorizes.
	identity KeyPair
	// requests counts the HTTP requests served, refused ones included.
	requests *atomic.Int64
}

// NewGitServer starts a Git server on loopback with a fresh root directory. It is stopped and
// its root removed by t.Cleanup.
func NewGitServer(t testing.TB, opts Options) *GitServer {
	t.Helper()
	RequireGit(t)
	s := &GitServer{root: t.TempDir(), requests: &atomic.Int64{}}
	logf := cleanupSafeLogf(t)

	handler := &httpBackend{root: s.root, username: opts.Username, password: opts.Password, token: opts.BearerToken, logf: logf,
		requests: s.requests, delay: opts.Delay}
	s.http = httptest.NewUnstartedServer(handler)
	// Server errors (a client refusing the test certificate) go to the test log, not stderr.
	s.http.Config.ErrorLog = log.New(logWriter(logf), "", 0)
	if opts.TLS {
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	t.Cleanup(s.http.Close)

	if opts.SSH {
		s.identity = NewKeyPair(t, KeyED25519)
		authorized := append([]KeyPair{s.identity}, opts.AuthorizedKeys...)
		s.ssh = startSSH(t, s.root, NewKeyPair(t, opts.SSHHostKey), authorized, logf)
	}
	return s
}

// Requests is the number of HTTP requests the server has answered so far (a Git client's round
// trips: `GET info/refs` and `POST git-upload-pack` for a clone, a 401 challenge each).
func (s *GitServer) Requests() int64 { return s.requests.Load() }

// Root is the directory holding the bare repositories.
func (s *GitServer) Root() string { return s.root }

// HTTPURL is the base URL of the HTTP(S) server, without a trailing slash; a repository named
// "app" is at HTTPURL()+"/app.git".
func (s *GitServer) HTTPURL() string { return s.http.URL }

// CAPEM is the PEM certificate of the HTTPS server, to trust as "ca.crt"; nil without TLS.
func (s *GitServer) CAPEM() []byte {
	if s.http.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.http.Certificate().Raw})
}

// SSHAddr is the SSH server's "127.0.0.1:port".
func (s *GitServer) SSHAddr() string { return s.mustSSH().addr }

// SSHURL is the base "ssh://git@127.0.0.1:port" URL; a repository named "app" is at
// SSHURL()+"/app.git".
func (s *GitServer) SSHURL() string { return "ssh://git@" + s.mustSSH().addr }

// KnownHosts is the known_hosts line for the SSH server's host key ("[127.0.0.1]:port
// ssh-ed25519 AAAA...\n"), as produced by x/crypto/ssh/knownhosts.Line.
func (s *GitServer) KnownHosts() []byte { return []byte(s.mustSSH().knownHosts + "\n") }

// HostKey is the SSH server's public host key.
func (s *GitServer) HostKey() ssh.PublicKey { return s.mustSSH().hostKey.PublicKey }

// Identity is the generated client key pair the SSH server authorizes ("identity" and
// "identity.pub").
func (s *GitServer) Identity() KeyPair {
	s.mustSSH()
	return s.identity
}

func (s *GitServer) mustSSH() *sshServer {
	if s.ssh == nil {
		panic("testserver: the SSH server is not started: set Options.SSH")
	}
	return s.ssh
}

// cleanupSafeLogf logs server-side errors through t.Logf until the test's cleanup, and drops
// them after: a connection still closing when the test ends must not call t.Logf late, which
// panics.
func cleanupSafeLogf(t testing.TB) func(format string, args ...any) {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
	})
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf("testserver: %s", strings.TrimSpace(fmt.Sprintf(format, args...)))
		}
	}
}
