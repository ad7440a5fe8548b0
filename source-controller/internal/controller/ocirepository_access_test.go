package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"net/http/httputil"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// How an OCIRepository reaches its registry, as Flux's: the CA of spec.certSecretRef, the
// proxy of spec.proxySecretRef, the imagePullSecrets of spec.serviceAccountName; a cloud
// provider stalls with a message.
func TestOCIRepositoryRegistryAccess(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	create := func(name string, spec sourcev1.OCIRepositorySpec) client.ObjectKey {
		spec.Interval = metav1.Duration{Duration: time.Hour}
		spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "1.0.0"}
		obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		return client.ObjectKeyFromObject(obj)
	}

	// TLS with the registry's CA, and a client without it.
	tlsRegistry := testserver.NewRegistry(t, testserver.RegistryOptions{TLS: true})
	d := tlsRegistry.PushArtifact(t, "manifests/app:1.0.0", map[string]string{"app.yaml": "tls\n"}, nil)
	createSecret(t, ns, "registry-ca", map[string][]byte{"ca.crt": tlsRegistry.CAPEM()})
	trusted := create("tls", sourcev1.OCIRepositorySpec{URL: "oci://" + tlsRegistry.Host() + "/manifests/app",
		CertSecretRef: &meta.LocalObjectReference{Name: "registry-ca"}})
	g.Eventually(ociRevision(trusted), timeout).Should(Equal("1.0.0@" + d))
	untrusted := create("untrusted", sourcev1.OCIRepositorySpec{URL: "oci://" + tlsRegistry.Host() + "/manifests/app"})
	g.Eventually(func(g Gomega) string {
		return conditions.GetMessage(getOCIRepo(g, untrusted), sourcev1.FetchFailedCondition)
	}, timeout).Should(ContainSubstring("certificate"))

	// Through a forward proxy, with its credentials.
	plain := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	d = plain.PushArtifact(t, "manifests/app:1.0.0", map[string]string{"app.yaml": "proxied\n"}, nil)
	var proxied atomic.Int64
	var proxyAuth atomic.Value
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		proxied.Add(1)
		proxyAuth.Store(r.In.Header.Get("Proxy-Authorization"))
		r.Out.URL = r.In.URL
		r.Out.Header.Del("Proxy-Authorization")
	}})
	t.Cleanup(proxy.Close)
	createSecret(t, ns, "proxy", map[string][]byte{"address": []byte(proxy.URL), "username": []byte("u"), "password": []byte("p")})

	// The credentials come from the ServiceAccount's imagePullSecrets.
	auth := base64.StdEncoding.EncodeToString([]byte("bob:s3cret"))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{plain.Host(): map[string]string{"auth": auth}}})
	createSecret(t, ns, "pull", map[string][]byte{".dockerconfigjson": config})
	g.Expect(k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "puller"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}})).To(Succeed())
	viaProxy := create("proxied", sourcev1.OCIRepositorySpec{URL: "oci://" + plain.Host() + "/manifests/app", Insecure: true,
		ServiceAccountName: "puller", ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"}})
	g.Eventually(ociRevision(viaProxy), timeout).Should(Equal("1.0.0@" + d))
	g.Expect(proxied.Load()).To(BeNumerically(">=", 2))
	g.Expect(proxyAuth.Load()).To(Equal("Basic dTpw")) // u:p

	// Without the ServiceAccount's secrets the registry refuses.
	anonymous := create("anonymous", sourcev1.OCIRepositorySpec{URL: "oci://" + plain.Host() + "/manifests/app", Insecure: true})
	g.Eventually(func(g Gomega) string {
		return conditions.GetReason(getOCIRepo(g, anonymous), sourcev1.FetchFailedCondition)
	}, timeout).Should(Equal(sourcev1.OCIPullFailedReason))

	cloud := create("cloud", sourcev1.OCIRepositorySpec{URL: "oci://" + plain.Host() + "/manifests/app", Provider: "aws"})
	g.Eventually(func(g Gomega) bool { return conditions.IsStalled(getOCIRepo(g, cloud)) }, timeout).Should(BeTrue())
	g.Expect(conditions.GetMessage(getOCIRepo(g, cloud), meta.ReadyCondition)).To(Equal(
		"provider 'aws' needs a cloud identity, which this source-controller does not obtain: " +
			"use provider generic with credentials in Secrets"))
}
