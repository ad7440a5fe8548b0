package controller

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Keys the server refuses fail the fetch (FetchFailed, BucketOperationFailed, with S3's word for
// it); the last artifact stays served.
func TestBucketWrongCredentialsKeepTheLastArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{AccessKey: "flux", SecretKey: "right"})
	s3.Put(t, "manifests", "app.yaml", "v: 1\n")
	createSecret(t, ns, "good", map[string][]byte{"accesskey": []byte("flux"), "secretkey": []byte("right")})
	createSecret(t, ns, "bad", map[string][]byte{"accesskey": []byte("flux"), "secretkey": []byte("wrong")})
	createSecret(t, ns, "incomplete", map[string][]byte{"accesskey": []byte("flux")})
	key := createBucket(t, ns, "creds", sourcev1.BucketSpec{
		BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true, SecretRef: &meta.LocalObjectReference{Name: "good"},
	})
	rev := wantRevision(map[string]string{"app.yaml": "v: 1\n"})
	g.Eventually(bucketRevision(key), timeout).Should(Equal(rev))

	s3.Put(t, "manifests", "app.yaml", "v: 2\n")
	updateBucket(t, key, func(s *sourcev1.BucketSpec) { s.SecretRef.Name = "bad" })
	g.Eventually(bucketCondition(key, sourcev1.FetchFailedCondition), timeout).Should(And(
		HavePrefix("True|BucketOperationFailed|"), ContainSubstring("signature")))
	g.Expect(bucketCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|BucketOperationFailed|"))
	g.Expect(bucketRevision(key)(g)).To(Equal(rev))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(map[string]string{"app.yaml": "v: 1\n"}))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix("Warning BucketOperationFailed: ")))

	updateBucket(t, key, func(s *sourcev1.BucketSpec) { s.SecretRef.Name = "incomplete" })
	g.Eventually(bucketCondition(key, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|AuthenticationFailed|secret '" + ns + "/incomplete' needs both 'accesskey' and 'secretkey'"))

	updateBucket(t, key, func(s *sourcev1.BucketSpec) { s.SecretRef.Name = "good" })
	g.Eventually(bucketRevision(key), timeout).Should(Equal(wantRevision(map[string]string{"app.yaml": "v: 2\n"})))
	g.Eventually(bucketCondition(key, sourcev1.FetchFailedCondition), timeout).Should(BeEmpty())
}

// Over HTTPS the server's CA comes from spec.certSecretRef (ca.crt); without it the certificate
// is refused.
func TestBucketTLSWithCertSecretRef(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{AccessKey: "flux", SecretKey: "s3cret", TLS: true})
	s3.Put(t, "manifests", "app.yaml", "tls\n")
	createSecret(t, ns, "keys", map[string][]byte{"accesskey": []byte("flux"), "secretkey": []byte("s3cret")})
	createSecret(t, ns, "ca", map[string][]byte{"ca.crt": s3.CAPEM()})
	spec := sourcev1.BucketSpec{BucketName: "manifests", Endpoint: s3.Endpoint(), SecretRef: &meta.LocalObjectReference{Name: "keys"}}

	untrusted := createBucket(t, ns, "untrusted", spec)
	g.Eventually(bucketCondition(untrusted, sourcev1.FetchFailedCondition), timeout).Should(And(
		HavePrefix("True|BucketOperationFailed|"), ContainSubstring("certificate")))

	spec.CertSecretRef = &meta.LocalObjectReference{Name: "ca"}
	trusted := createBucket(t, ns, "trusted", spec)
	g.Eventually(bucketRevision(trusted), timeout).Should(Equal(wantRevision(map[string]string{"app.yaml": "tls\n"})))
	g.Expect(fetchBucketArtifact(t, trusted)).To(Equal(map[string]string{"app.yaml": "tls\n"}))
}

// Objects over --artifact-max-size (1 MiB in the suite) by their listed sizes are refused before
// any download, with a message naming the size and the limit; the last artifact stays served.
func TestBucketOverMaxSizeKeepsTheLastArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	s3.Put(t, "manifests", "app.yaml", "small\n")
	key := createBucket(t, ns, "big", sourcev1.BucketSpec{BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true})
	rev := wantRevision(map[string]string{"app.yaml": "small\n"})
	g.Eventually(bucketRevision(key), timeout).Should(Equal(rev))
	gets := s3.Gets("manifests")

	s3.Put(t, "manifests", "big-1.bin", strings.Repeat("x", 600<<10))
	s3.Put(t, "manifests", "big-2.bin", strings.Repeat("y", 600<<10))
	pokeBucket(t, key)
	g.Eventually(bucketCondition(key, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|SourceTooLarge|the content of bucket 'manifests' is 1.2 MiB, over --artifact-max-size (1 MiB)"))
	g.Expect(s3.Gets("manifests")).To(Equal(gets))
	g.Expect(bucketRevision(key)(g)).To(Equal(rev))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(map[string]string{"app.yaml": "small\n"}))
	g.Expect(bucketCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|SourceTooLarge|"))
}

// gcp, azure, and aws without static keys need cloud identity: the Bucket stalls and says so,
// without reaching any endpoint.
func TestBucketCloudIdentityProvidersStall(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	for name, provider := range map[string]string{"gcs": sourcev1.BucketProviderGoogle, "blob": sourcev1.BucketProviderAzure, "s3": sourcev1.BucketProviderAmazon} {
		key := createBucket(t, ns, name, sourcev1.BucketSpec{Provider: provider, BucketName: "manifests", Endpoint: "storage.example.invalid"})
		g.Eventually(bucketCondition(key, meta.StalledCondition), timeout).Should(And(
			HavePrefix("True|CloudIdentityUnsupported|"), ContainSubstring("needs cloud identity"),
			ContainSubstring("which this controller does not support offline")), name)
		g.Expect(bucketCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|CloudIdentityUnsupported|"), name)
		g.Expect(bucketCondition(key, sourcev1.FetchFailedCondition)(g)).To(ContainSubstring("'"+provider+"' provider"), name)
	}
}

// A server that requires a client certificate gets the one of spec.certSecretRef (tls.crt,
// tls.key, with the server's ca.crt); without it the handshake fails.
func TestBucketClientCertificate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{TLS: true, ClientCert: true})
	s3.Put(t, "manifests", "app.yaml", "mtls\n")
	certPEM, keyPEM := s3.ClientCertPEM(t)
	createSecret(t, ns, "ca-only", map[string][]byte{"ca.crt": s3.CAPEM()})
	createSecret(t, ns, "client", map[string][]byte{"ca.crt": s3.CAPEM(), "tls.crt": certPEM, "tls.key": keyPEM})
	spec := sourcev1.BucketSpec{BucketName: "manifests", Endpoint: s3.Endpoint(), CertSecretRef: &meta.LocalObjectReference{Name: "ca-only"}}

	refused := createBucket(t, ns, "no-client-cert", spec)
	g.Eventually(bucketCondition(refused, sourcev1.FetchFailedCondition), timeout).Should(HavePrefix("True|BucketOperationFailed|"))

	spec.CertSecretRef.Name = "client"
	key := createBucket(t, ns, "client-cert", spec)
	g.Eventually(bucketRevision(key), timeout).Should(Equal(wantRevision(map[string]string{"app.yaml": "mtls\n"})))
}
