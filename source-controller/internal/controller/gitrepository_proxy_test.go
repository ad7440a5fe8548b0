package controller

import (
	"net/http/httptest"
	"net/http/httputil"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// With spec.proxySecretRef the listing of references and the clone go through the proxy, with
// its credentials. A Secret without an address, and an HTTP proxy for an ssh URL (SSH only
// goes through SOCKS5), are refused before any request.
func TestGitRepositoryProxy(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := server.NewRepo(t, "proxied")
	first := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	// A forward proxy for plain HTTP: the request line holds the absolute URL, sent on as is.
	var proxied atomic.Int64
	var auth atomic.Value
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		proxied.Add(1)
		auth.Store(r.In.Header.Get("Proxy-Authorization"))
		r.Out.URL = r.In.URL
		r.Out.Header.Del("Proxy-Authorization")
	}})
	t.Cleanup(proxy.Close)
	createSecret(t, ns, "proxy", map[string][]byte{"address": []byte(proxy.URL), "username": []byte("u"), "password": []byte("p")})
	createSecret(t, ns, "no-address", map[string][]byte{"username": []byte("u")})

	key := createRepo(t, ns, "proxied", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"}})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + first))
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{"a": "1"}))
	// The clone (info/refs and upload-pack): a first fetch lists nothing before it.
	g.Expect(proxied.Load()).To(BeNumerically(">=", 2))
	g.Expect(auth.Load()).To(Equal("Basic dTpw")) // u:p

	second := repo.Commit(t, "Second", map[string]string{"a": "2"})
	before := proxied.Load()
	poke(t, key)
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + second))
	g.Expect(proxied.Load()).To(BeNumerically(">=", before+3))

	noAddress := createRepo(t, ns, "no-address", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), ProxySecretRef: &meta.LocalObjectReference{Name: "no-address"}})
	g.Eventually(condition(noAddress, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|AuthenticationFailed|secret '" + ns + "/no-address': 'address' is missing"))

	createSecret(t, ns, "ssh-auth", map[string][]byte{"identity": server.Identity().PrivateKeyPEM, "known_hosts": server.KnownHosts()})
	before = proxied.Load()
	ssh := createRepo(t, ns, "ssh", sourcev1.GitRepositorySpec{
		URL: repo.SSHURL(), SecretRef: &meta.LocalObjectReference{Name: "ssh-auth"}, ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"},
	})
	g.Eventually(condition(ssh, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|AuthenticationFailed|secret '" + ns + "/proxy': an ssh URL can only go through a socks5 proxy, not http"))
	g.Expect(proxied.Load()).To(Equal(before))
}
