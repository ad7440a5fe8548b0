package inputs_test

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/secrets"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// service is an HTTPS service answering like a real inputs service: it checks the Accept header
// and the credentials, and serves a fixed body per path.
type service struct {
	srv    *httptest.Server
	caPEM  []byte
	bodies map[string]string
}

// allowLoopback is --external-service-allowed-cidrs=127.0.0.1/32: the test services listen on
// loopback, which ExternalService providers are refused by default.
var allowLoopback = &inputs.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

const (
	serviceToken    = "t0ken-value"
	serviceUser     = "svc"
	servicePassword = "pa55word"
)

func newService(t *testing.T, tls bool) *service {
	t.Helper()
	s := &service{bodies: map[string]string{
		"/valid": `{"inputs": [
			{"id": "pr-1", "branch": "feat/a", "replicas": 2, "meta": {"labels": ["x", "y"], "weight": 0.5}},
			{"id": "pr-2", "branch": "feat/b", "replicas": 1}
		]}`,
		"/empty":      `{"inputs": []}`,
		"/no-inputs":  `{"items": []}`,
		"/duplicate":  `{"inputs": [{"id": "a"}, {"id": "b"}, {"id": "a"}]}`,
		"/missing-id": `{"inputs": [{"id": "a"}, {"name": "no id"}]}`,
		"/empty-id":   `{"inputs": [{"id": ""}]}`,
		"/number-id":  `{"inputs": [{"id": 7}]}`,
		"/non-object": `{"inputs": [{"id": "a"}, "b"]}`,
		"/not-json":   `<html>maintenance</html>`,
		"/trailing":   `{"inputs": []} {"inputs": []}`,
		"/large":      `{"inputs": [{"id": "a", "pad": "` + strings.Repeat("x", 4096) + `"}]}`,
	}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/bearer/"):
			if r.Header.Get("Authorization") != "Bearer "+serviceToken {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		case strings.HasPrefix(r.URL.Path, "/basic/"):
			if u, p, ok := r.BasicAuth(); !ok || u != serviceUser || p != servicePassword {
				// Echo the header, as careless services do: the client must not quote it.
				http.Error(w, "unauthorized: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
				return
			}
		}
		if r.URL.Path == "/boom" {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		path := "/" + strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/bearer"), "/basic")
		path = "/" + strings.TrimLeft(path, "/")
		body, ok := s.bodies[path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	})
	s.srv = httptest.NewUnstartedServer(handler)
	// The refused handshakes of the untrusted-CA tests are expected; the client's error says why.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		s.srv.StartTLS()
		s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

// trust is the TLS settings of a certSecretRef whose ca.crt is caPEM (nil without one).
func trust(t *testing.T, caPEM []byte) *tls.Config {
	t.Helper()
	if caPEM == nil {
		return nil
	}
	cfg, err := secrets.TLSConfig(t.Context(), "ns", "ca", map[string][]byte{"ca.crt": caPEM})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return cfg
}

func TestExternalService(t *testing.T) {
	svc := newService(t, true)
	client := inputs.HTTPClient(trust(t, svc.caPEM), false, 10*time.Second, allowLoopback)
	get := func(path string, auth inputs.Auth, maxBytes int64) ([]map[string]any, error) {
		return inputs.ExternalService(context.Background(), svc.srv.URL+path, client, auth, maxBytes)
	}

	t.Run("a valid response", func(t *testing.T) {
		g := NewWithT(t)
		got, err := get("/valid", inputs.Auth{}, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal([]map[string]any{
			{"id": "pr-1", "branch": "feat/a", "replicas": int64(2), "meta": map[string]any{"labels": []any{"x", "y"}, "weight": 0.5}},
			{"id": "pr-2", "branch": "feat/b", "replicas": int64(1)},
		}))
	})

	t.Run("no inputs", func(t *testing.T) {
		g := NewWithT(t)
		got, err := get("/empty", inputs.Auth{}, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeEmpty())
	})

	for _, tc := range []struct {
		path    string
		wantErr string
	}{
		{"/no-inputs", `the response has no "inputs" list`},
		{"/duplicate", `inputs 0 and 2 have the same id: ids must be unique`},
		{"/missing-id", `input 1 has no "id": every input needs a non-empty string id`},
		{"/empty-id", `input 0 has no "id"`},
		{"/number-id", `input 0 has no "id"`},
		{"/non-object", `input 1 is not a JSON object`},
		{"/not-json", `the response is not a JSON object {"inputs": [...]}`},
		{"/trailing", `unexpected data after the JSON response`},
		{"/boom", `: 500 Internal Server Error`},
		{"/nowhere", `: 404 Not Found`},
	} {
		t.Run("refused: "+tc.path, func(t *testing.T) {
			g := NewWithT(t)
			_, err := get(tc.path, inputs.Auth{}, 0)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(err.Error()).To(HavePrefix("GET " + svc.srv.URL + tc.path + ": "))
		})
	}

	t.Run("a body over the limit", func(t *testing.T) {
		g := NewWithT(t)
		_, err := get("/large", inputs.Auth{}, 1024)
		g.Expect(err).To(MatchError(ContainSubstring("response larger than 1024 bytes")))
		got, err := get("/large", inputs.Auth{}, 0)
		g.Expect(err).NotTo(HaveOccurred(), "the default limit is 1 MiB")
		g.Expect(got).To(HaveLen(1))
	})

	t.Run("bearer token", func(t *testing.T) {
		g := NewWithT(t)
		got, err := get("/bearer/valid", inputs.Auth{Token: serviceToken}, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(2))

		_, err = get("/bearer/valid", inputs.Auth{Token: "wrong-t0ken"}, 0)
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
		g.Expect(err.Error()).NotTo(ContainSubstring("wrong-t0ken"))
	})

	t.Run("basic auth", func(t *testing.T) {
		g := NewWithT(t)
		got, err := get("/basic/valid", inputs.Auth{Username: serviceUser, Password: servicePassword}, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(2))

		_, err = get("/basic/valid", inputs.Auth{Username: serviceUser, Password: "wrong-pa55"}, 0)
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
		g.Expect(err.Error()).NotTo(ContainSubstring("Basic"), "the echoed credentials are not quoted")

		_, err = get("/basic/valid", inputs.Auth{}, 0)
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
	})

	t.Run("credentials in the URL are not shown", func(t *testing.T) {
		g := NewWithT(t)
		url := strings.Replace(svc.srv.URL, "https://", "https://someone:url-secret@", 1) + "/boom"
		_, err := inputs.ExternalService(context.Background(), url, client, inputs.Auth{}, 0)
		g.Expect(err).To(MatchError(ContainSubstring("500 Internal Server Error")))
		g.Expect(err.Error()).NotTo(ContainSubstring("url-secret"))
	})

	t.Run("a cancelled context", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := inputs.ExternalService(ctx, svc.srv.URL+"/valid", client, inputs.Auth{}, 0)
		g.Expect(err).To(MatchError(context.Canceled))
	})
}

func TestExternalServiceTLS(t *testing.T) {
	svc := newService(t, true)
	url := svc.srv.URL + "/valid"

	t.Run("a CA that is not trusted fails", func(t *testing.T) {
		g := NewWithT(t)
		client := inputs.HTTPClient(nil, false, 10*time.Second, allowLoopback)
		_, err := inputs.ExternalService(context.Background(), url, client, inputs.Auth{}, 0)
		g.Expect(err).To(MatchError(ContainSubstring("certificate")))
	})

	t.Run("the trusted CA passes", func(t *testing.T) {
		g := NewWithT(t)
		client := inputs.HTTPClient(trust(t, svc.caPEM), false, 10*time.Second, allowLoopback)
		got, err := inputs.ExternalService(context.Background(), url, client, inputs.Auth{}, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(2))
	})
}

func TestExternalServicePlainHTTP(t *testing.T) {
	svc := newService(t, false)
	url := svc.srv.URL + "/bearer/valid"
	auth := inputs.Auth{Token: serviceToken}

	t.Run("refused without insecure", func(t *testing.T) {
		g := NewWithT(t)
		client := inputs.HTTPClient(nil, false, 10*time.Second, allowLoopback)
		_, err := inputs.ExternalService(context.Background(), url, client, auth, 0)
		g.Expect(err).To(MatchError(ContainSubstring("refusing plain http:// without spec.insecure")))
	})

	t.Run("a redirect to plain HTTP is refused too", func(t *testing.T) {
		g := NewWithT(t)
		redirect := httptest.NewTLSServer(http.RedirectHandler(url, http.StatusFound))
		t.Cleanup(redirect.Close)
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirect.Certificate().Raw})
		client := inputs.HTTPClient(trust(t, ca), false, 10*time.Second, allowLoopback)
		_, err := inputs.ExternalService(context.Background(), redirect.URL, client, auth, 0)
		g.Expect(err).To(MatchError(ContainSubstring("refusing plain http://")))
	})

	t.Run("allowed with insecure", func(t *testing.T) {
		g := NewWithT(t)
		client := inputs.HTTPClient(nil, true, 10*time.Second, allowLoopback)
		got, err := inputs.ExternalService(context.Background(), url, client, auth, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(2))
	})

	t.Run("not an HTTP URL", func(t *testing.T) {
		g := NewWithT(t)
		_, err := inputs.ExternalService(context.Background(), "ftp://example.invalid/inputs", nil, auth, 0)
		g.Expect(err).To(MatchError(ContainSubstring("it must be an http(s):// address")))
		g.Expect(inputs.IsTerminal(err)).To(BeTrue())
	})
}
