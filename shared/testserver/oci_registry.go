package testserver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// RegistryOptions configure NewRegistry. The zero value is an anonymous plain-HTTP registry.
type RegistryOptions struct {
	// Username and Password, when Username is set, require HTTP basic auth on every request.
	Username, Password string
	// TLS serves HTTPS with httptest's certificate for 127.0.0.1; CAPEM returns it.
	TLS bool
}

// Registry is an OCI distribution registry in process: go-containerregistry's pkg/registry
// (the one its own tests use) behind httptest on loopback. Content lives in memory and is lost
// with the test.
type Registry struct {
	srv                *httptest.Server
	username, password string
}

// NewRegistry starts an empty registry. It is stopped by t.Cleanup.
func NewRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	r := &Registry{username: opts.Username, password: opts.Password}
	// The registry logs every request, and ORAS probes blobs with HEADs that are answered 404
	// by design: too much noise for a test log. Failures surface in the clients' errors.
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if opts.Username != "" {
		handler = &registryAuth{next: handler, username: opts.Username, password: opts.Password}
	}
	r.srv = httptest.NewUnstartedServer(handler)
	r.srv.Config.ErrorLog = log.New(logWriter(cleanupSafeLogf(t)), "", 0)
	if opts.TLS {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	return r
}

// Host is the registry's "127.0.0.1:port", the first part of a reference
// ("127.0.0.1:port/charts/app:1.0.0", or "oci://127.0.0.1:port/charts" for Helm).
func (r *Registry) Host() string {
	return strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "https://"), "http://")
}

// TLS reports whether the registry serves HTTPS.
func (r *Registry) TLS() bool { return r.srv.TLS != nil }

// CAPEM is the PEM certificate of the HTTPS server, to trust as "ca.crt"; nil without TLS.
func (r *Registry) CAPEM() []byte {
	if r.srv.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// Transport is an HTTP transport for clients of this registry: it trusts the test certificate
// with TLS. It is a fresh transport (not the httptest server's client) so clients do not share
// connections with each other.
func (r *Registry) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if r.srv.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(r.srv.Certificate())
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr
}

// registryAuth requires HTTP basic auth in front of the registry. The challenge is
// `Basic realm="registry"`, which both clients the tests use follow without a token service:
// ORAS (Helm's registry client) retries a 401 with basic credentials when the challenge's
// scheme is Basic, and go-containerregistry's remote pings /v2/, reads the scheme and sends
// basic credentials on every later request. Docker's token flow (Bearer challenge plus a
// token endpoint) is not needed for either.
type registryAuth struct {
	next               http.Handler
	username, password string
}

func (a *registryAuth) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	user, pass, ok := req.BasicAuth()
	if !ok || !equal(user, a.username) || !equal(pass, a.password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// The distribution spec's error body, which clients quote in their errors.
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`+"\n")
		return
	}
	a.next.ServeHTTP(w, req)
}
