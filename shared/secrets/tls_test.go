package secrets_test

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

// ca.crt is trusted in addition to the system's roots: an HTTPS server with a private CA is
// reached, and the system's roots still verify the others.
func TestTLSConfigAddsTheCAToTheSystemPool(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	cfg, err := secrets.TLSConfig(t.Context(), "ns", "ca", map[string][]byte{"ca.crt": ca})
	g.Expect(err).NotTo(HaveOccurred())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	want, err := x509.SystemCertPool()
	g.Expect(err).NotTo(HaveOccurred())
	want.AddCert(srv.Certificate())
	g.Expect(cfg.RootCAs.Equal(want)).To(BeTrue(), "the system's roots and ca.crt")

	// Without the CA the server is not trusted.
	_, err = (&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}).Get(srv.URL)
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))
}

// A Secret without TLS material, half a key pair or a CA that is not PEM says what to fix,
// naming the Secret.
func TestTLSConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		data map[string][]byte
		msg  string
	}{
		{data: map[string][]byte{"username": []byte("u")},
			msg: "secret 'ns/tls' must contain either 'ca.crt' or both 'tls.crt' and 'tls.key'"},
		{data: map[string][]byte{"tls.crt": []byte("x")}, msg: "secret 'ns/tls' contains 'tls.crt' but missing 'tls.key'"},
		{data: map[string][]byte{"ca.crt": []byte("not PEM")}, msg: "secret 'ns/tls': failed to parse CA certificate"},
		{data: map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")},
			msg: "secret 'ns/tls': failed to parse TLS certificate and key: tls: failed to find any PEM data in certificate input"},
	} {
		_, err := secrets.TLSConfig(t.Context(), "ns", "tls", tc.data)
		NewWithT(t).Expect(err).To(MatchError(tc.msg))
	}
}

// Transport reaches a server of the Secret's private CA, with the default transport's other
// settings (the environment's proxy), and refuses a Secret without TLS material.
func TestTransportFromSecret(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	tr, err := secrets.Transport(t.Context(), "ns", "ca", map[string][]byte{"ca.crt": ca})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr.Proxy).NotTo(BeNil(), "the environment's proxy, as http.DefaultTransport")
	g.Expect(tr).NotTo(BeIdenticalTo(http.DefaultTransport), "a copy: the default transport is not changed")
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	_, err = secrets.Transport(t.Context(), "ns", "empty", map[string][]byte{"token": []byte("x")})
	g.Expect(err).To(MatchError(ContainSubstring("ns/empty")))
}
