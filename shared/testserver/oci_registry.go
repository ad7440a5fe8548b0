package testserver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gitops/sluice/shared/testserver/ociregistry"
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
	r.srv = httptest.NewUnstartedServer(ociregistry.Handler(opts.Username, opts.Password))
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
