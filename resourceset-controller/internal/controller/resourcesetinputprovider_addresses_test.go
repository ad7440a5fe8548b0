package controller

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// rsipServeOn serves handler over plain HTTP on addr (a loopback address: Linux answers on all
// of 127.0.0.0/8) and counts the requests.
func rsipServeOn(t *testing.T, addr string, handler http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var requests atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		handler.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &requests
}

func rsipInsecureManifest(name, url string) string {
	return fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: %s
spec:
  type: ExternalService
  url: %s
  insecure: true
`, name, url)
}

// rsipRefusal is the message of a refused loopback address.
func rsipRefusal(url, addr string) string {
	return fmt.Sprintf("GET %s: refusing to connect to %s, a loopback address: the controller reaches such addresses only when "+
		"--external-service-allowed-cidrs allows them (e.g. --external-service-allowed-cidrs=%s/32)", url, addr, addr)
}

// A provider whose URL is a loopback address the controller's flags do not allow (the suite
// allows 127.0.0.1 only, as --external-service-allowed-cidrs=127.0.0.1/32; by default no
// loopback address is) is refused before anything is sent, directly or through a redirect from
// an allowed server: Ready=False and Stalled, the message names the refusal and the flag.
func TestInputProviderExternalServiceRefusedAddress(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	internal, reached := rsipServeOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"inputs": [{"id": "internal"}]}`)
	}))
	redirect, _ := rsipServeOn(t, "127.0.0.1", http.RedirectHandler(internal.URL+"/admin", http.StatusFound))

	for _, tc := range []struct{ name, url string }{
		{"direct", internal.URL + "/tenants"},
		{"redirected", redirect.URL + "/tenants"},
	} {
		obj := rsipCreate(t, ns, rsipInsecureManifest(tc.name, tc.url))
		key := client.ObjectKeyFromObject(obj)
		want := rsipRefusal(tc.url, "127.0.0.2")
		g.Expect(rsipFailed(t, key)).To(Equal(want), tc.name)
		stalled := conditions.Get(rsipGet(g, key), meta.StalledCondition)
		g.Expect(stalled).NotTo(BeNil(), tc.name)
		g.Expect(stalled.Message).To(Equal(want))
		g.Expect(rsipGet(g, key).Status.ExportedInputs).To(BeEmpty())
		g.Eventually(rsipEventMessages(key), timeout).Should(ContainElement("Warning ReconciliationFailed: " + want))
	}
	g.Expect(reached.Load()).To(BeZero(), "no request reached the refused address")

	// The same service on the allowed address exports its inputs.
	allowed, _ := rsipServeOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"inputs": [{"id": "internal"}]}`)
	}))
	obj := rsipReady(t, client.ObjectKeyFromObject(rsipCreate(t, ns, rsipInsecureManifest("allowed", allowed.URL+"/tenants"))))
	g.Expect(rsipInputs(g, obj)).To(Equal([]map[string]any{{"id": "internal"}}))
}

// What a service answers to a failed fetch is never shown: not in the Ready and Stalled
// conditions, not in events, not in logs. Only the status code, or what kind of failure it
// was, is.
func TestInputProviderExternalServiceFailureQuotesNoResponse(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	const secret = "rsip-internal-b0dy"
	var answer atomic.Value
	answer.Store(`{"inputs": [{"id": "` + secret + `"}, {"id": "` + secret + `"}]}`)
	svc, _ := rsipServeOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		body := answer.Load().(string)
		if strings.HasPrefix(body, "500 ") {
			http.Error(w, body, http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, body)
	}))
	banner, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { banner.Close() })
	go func() {
		for {
			c, err := banner.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "SSH-2.0-%s\r\n", secret)
			c.Close()
		}
	}()

	url := svc.URL + "/tenants"
	obj := rsipCreate(t, ns, rsipInsecureManifest("quoted", url))
	key := client.ObjectKeyFromObject(obj)
	g.Expect(rsipFailed(t, key)).To(Equal("GET " + url + ": inputs 0 and 1 have the same id: ids must be unique"))

	answer.Store("500 " + secret)
	poke(t, obj)
	g.Expect(rsipFailed(t, key)).To(Equal("GET " + url + ": 500 Internal Server Error"))

	answer.Store("<html>" + secret + "</html>")
	poke(t, obj)
	g.Expect(rsipFailed(t, key)).To(Equal("GET " + url + `: the response is not a JSON object {"inputs": [...]}`))

	bannerURL := "http://" + banner.Addr().String() + "/tenants"
	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) { p.Spec.URL = bannerURL })
	g.Eventually(rsipCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"False|ReconciliationFailed|GET " + bannerURL + ": the exchange with the server failed (not an HTTP response, or a broken connection)"))

	for _, c := range rsipGet(g, key).Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring(secret))
	}
	for _, e := range rsipEventMessages(key)(g) {
		g.Expect(e).NotTo(ContainSubstring(secret))
	}
	rsipLogsFree(t, secret)
}

// A forge's address is the tenant's too: a GitHub, GitLab or Gitea provider whose URL is at a
// refused address (the cloud's metadata service, the node's ports, another loopback address)
// sends nothing there, and says why. Replays the class of Kargo's CVE-2026-32828 (a tenant's URL
// made the controller reach the metadata service). Checked against a reintroduced bug: with
// forgeHTTPClient given no address policy, the requests are sent (a server answers on
// 169.254.169.254 on some machines, and on 127.0.0.2 here) and this test fails.
func TestInputProviderForgeRefusedAddress(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	internal, reached := rsipServeOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `[]`)
	}))
	for _, tc := range []struct{ name, typ, url, addr string }{
		{"github-metadata", "GitHubBranch", "http://169.254.169.254/latest/meta-data", "169.254.169.254"},
		{"gitlab-loopback", "GitLabBranch", internal.URL + "/group/project", "127.0.0.2"},
		{"gitea-loopback", "GiteaBranch", internal.URL + "/owner/repo", "127.0.0.2"},
	} {
		obj := rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: %s
spec:
  type: %s
  url: %s
`, tc.name, tc.typ, tc.url))
		msg := rsipFailed(t, client.ObjectKeyFromObject(obj))
		g.Expect(msg).To(ContainSubstring("refusing to connect to "+tc.addr), tc.name)
		g.Expect(msg).To(ContainSubstring("--external-service-allowed-cidrs"), tc.name)
	}
	g.Expect(reached.Load()).To(BeZero(), "no request reached the refused address")
}
