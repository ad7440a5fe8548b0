package inputs_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// fetch GETs url with a client of the policy that trusts the CA of the test servers.
func fetch(t *testing.T, policy *inputs.AddressPolicy, caPEM []byte, insecure bool, url string) error {
	t.Helper()
	client := inputs.HTTPClient(trust(t, caPEM), insecure, 10*time.Second, policy)
	_, err := inputs.ExternalService(context.Background(), url, client, inputs.Auth{}, 0)
	return err
}

// refusal is the message of a refused address.
func refusal(addr, why, allow string) string {
	return fmt.Sprintf("refusing to connect to %s, %s: the controller reaches such addresses only when --external-service-allowed-cidrs allows them (e.g. --external-service-allowed-cidrs=%s)",
		addr, why, allow)
}

// By default an ExternalService reaches neither the controller's host (loopback, unspecified
// addresses), nor the link-local addresses of cloud metadata services, nor the cluster's Service
// range when it is given: the address dialed is checked, so a host name resolving to such an
// address is refused too. The refusal names the flag that allows it and is terminal.
func TestExternalServiceRefusedAddresses(t *testing.T) {
	svc := newService(t, true)
	port := svc.srv.Listener.Addr().(*net.TCPAddr).Port
	serviceRange := &inputs.AddressPolicy{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}
	for _, tc := range []struct {
		name, url string
		policy    *inputs.AddressPolicy
		want      string
	}{
		{"a loopback server", svc.srv.URL + "/valid", &inputs.AddressPolicy{}, refusal("127.0.0.1", "a loopback address", "127.0.0.1/32")},
		{"a host name resolving to loopback", fmt.Sprintf("https://localhost:%d/valid", port), &inputs.AddressPolicy{}, "a loopback address"},
		{"an IPv4-mapped loopback address", fmt.Sprintf("https://[::ffff:127.0.0.1]:%d/valid", port), &inputs.AddressPolicy{},
			refusal("127.0.0.1", "a loopback address", "127.0.0.1/32")},
		{"the unspecified address", fmt.Sprintf("https://0.0.0.0:%d/valid", port), &inputs.AddressPolicy{},
			refusal("0.0.0.0", "an unspecified address", "0.0.0.0/32")},
		{"the cloud metadata service", "https://169.254.169.254/latest/meta-data/", &inputs.AddressPolicy{},
			refusal("169.254.169.254", "a link-local address (cloud metadata services are there)", "169.254.169.254/32")},
		{"an IPv6 link-local address", "https://[fe80::1]/", &inputs.AddressPolicy{},
			refusal("fe80::1", "a link-local address (cloud metadata services are there)", "fe80::1/128")},
		{"a Service of the cluster", "https://10.96.0.1/", serviceRange,
			refusal("10.96.0.1", "in the cluster's Service range 10.96.0.0/12", "10.96.0.1/32")},
		{"another loopback address than the one allowed", fmt.Sprintf("https://127.0.0.2:%d/valid", port), allowLoopback,
			refusal("127.0.0.2", "a loopback address", "127.0.0.2/32")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := fetch(t, tc.policy, svc.caPEM, false, tc.url)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).To(HavePrefix("GET " + tc.url + ": refusing to connect to "))
			g.Expect(inputs.IsTerminal(err)).To(BeTrue())
		})
	}

	t.Run("the default client", func(t *testing.T) {
		_, err := inputs.ExternalService(context.Background(), svc.srv.URL+"/valid", nil, inputs.Auth{}, 0)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring(refusal("127.0.0.1", "a loopback address", "127.0.0.1/32"))))
	})

	t.Run("allowed by --external-service-allowed-cidrs", func(t *testing.T) {
		g := NewWithT(t)
		for _, allowed := range [][]string{{"127.0.0.1"}, {"127.0.0.0/8"}, {"0.0.0.0/0", "::/0"}} {
			prefixes, err := inputs.ParseCIDRs(allowed)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fetch(t, &inputs.AddressPolicy{Allowed: prefixes}, svc.caPEM, false, svc.srv.URL+"/valid")).To(Succeed(), "%v", allowed)
		}
	})
}

// startOn starts a server of handler on a loopback address other than 127.0.0.1 (Linux answers
// on all of 127.0.0.0/8).
func startOn(t *testing.T, addr string, handler http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// A redirect from an allowed server to a refused address is refused when it is dialed; the
// location it pointed to is not repeated.
func TestExternalServiceRedirectToRefusedAddress(t *testing.T) {
	g := NewWithT(t)
	internal := startOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"inputs": [{"id": "internal"}]}`)
	}))
	redirect := startOn(t, "127.0.0.1", http.RedirectHandler(internal.URL+"/private-location", http.StatusFound))

	err := fetch(t, allowLoopback, nil, true, redirect.URL+"/inputs")
	g.Expect(err).To(MatchError("GET " + redirect.URL + "/inputs: " + refusal("127.0.0.2", "a loopback address", "127.0.0.2/32")))
	g.Expect(inputs.IsTerminal(err)).To(BeTrue())

	// Allowed, the same redirect is followed.
	both := &inputs.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/30")}}
	g.Expect(fetch(t, both, nil, true, redirect.URL+"/inputs")).To(Succeed())
}

// Whatever a server answers, the error of a failed fetch quotes none of it: not the body of an
// error status, not a body that is not the expected JSON, not the ids or numbers of one that
// is, not what a server that does not speak HTTP sent, not where it redirected to.
func TestExternalServiceErrorsQuoteNoResponse(t *testing.T) {
	const secret = "internal-s3cret"
	bodies := map[string]struct {
		status int
		body   string
		want   string
	}{
		"/error":     {http.StatusInternalServerError, "<h1>" + secret + "</h1>", ": 500 Internal Server Error"},
		"/html":      {http.StatusOK, "<html>" + secret + "</html>", `: the response is not a JSON object {"inputs": [...]}`},
		"/wrong":     {http.StatusOK, `{"inputs": "` + secret + `"}`, `: the response is not a JSON object {"inputs": [...]}`},
		"/duplicate": {http.StatusOK, `{"inputs": [{"id": "` + secret + `"}, {"id": "` + secret + `"}]}`, ": inputs 0 and 1 have the same id: ids must be unique"},
		"/number":    {http.StatusOK, `{"inputs": [{"id": "a", "n": 1e999}]}`, ": input 0 holds a number out of range"},
		"/trailing":  {http.StatusOK, `{"inputs": []} "` + secret + `"`, ": unexpected data after the JSON response"},
		"/redirect":  {http.StatusFound, "", ": the exchange with the server failed (not an HTTP response, or a broken connection)"},
	}
	srv := startOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[r.URL.Path]
		if b.status == http.StatusFound {
			// A location the client cannot follow: its text must not come back.
			w.Header().Set("Location", "gopher://"+secret+"/")
		}
		w.WriteHeader(b.status)
		fmt.Fprint(w, b.body)
	}))
	for path, b := range bodies {
		t.Run(path, func(t *testing.T) {
			g := NewWithT(t)
			err := fetch(t, allowLoopback, nil, true, srv.URL+path)
			g.Expect(err).To(MatchError("GET " + srv.URL + path + b.want))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			g.Expect(err.Error()).NotTo(ContainSubstring("1e999"))
		})
	}

	t.Run("not an HTTP server", func(t *testing.T) {
		g := NewWithT(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "SSH-2.0-%s\r\n", secret)
				c.Close()
			}
		}()
		url := "http://" + l.Addr().String() + "/"
		err = fetch(t, allowLoopback, nil, true, url)
		g.Expect(err).To(MatchError("GET " + url + ": the exchange with the server failed (not an HTTP response, or a broken connection)"))
		g.Expect(err.Error()).NotTo(ContainSubstring(secret))
		g.Expect(strings.Contains(err.Error(), "SSH")).To(BeFalse())
	})
}
