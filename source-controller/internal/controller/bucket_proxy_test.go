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

// With spec.proxySecretRef every request goes through the proxy, with its credentials; a proxy
// Secret without an address is refused before any request. An endpoint with a scheme does not
// parse: the Bucket stalls.
func TestBucketProxyAndEndpoint(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	s3.Put(t, "manifests", "app.yaml", "proxied\n")
	// A forward proxy for plain HTTP (net/http/httputil): the request line holds the absolute
	// URL, which the proxy sends on as is.
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

	key := createBucket(t, ns, "proxied", sourcev1.BucketSpec{
		BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true, ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"},
	})
	g.Eventually(bucketRevision(key), timeout).Should(Equal(wantRevision(map[string]string{"app.yaml": "proxied\n"})))
	g.Expect(proxied.Load()).To(BeNumerically(">=", 3)) // the bucket, the listing, the object
	g.Expect(auth.Load()).To(Equal("Basic dTpw"))       // u:p

	updateBucket(t, key, func(s *sourcev1.BucketSpec) { s.ProxySecretRef.Name = "no-address" })
	g.Eventually(bucketCondition(key, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|AuthenticationFailed|secret '" + ns + "/no-address': 'address' is missing"))

	bad := createBucket(t, ns, "scheme", sourcev1.BucketSpec{BucketName: "manifests", Endpoint: "http://" + s3.Endpoint() + "/path"})
	g.Eventually(bucketCondition(bad, meta.StalledCondition), timeout).Should(HavePrefix("True|URLInvalid|invalid endpoint: endpoint 'http://"))
}
