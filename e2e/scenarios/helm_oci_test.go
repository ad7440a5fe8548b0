package scenarios

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

const ociCharts = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: oci-charts
spec:
  type: oci
  interval: 10m
  url: oci://__REGISTRY__/helm-charts
  insecure: true
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: signed
spec:
  interval: 10m
  chart: signed-app
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: oci-charts
  verify:
    provider: cosign
    secretRef:
      name: cosign-public-keys
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: unsigned
spec:
  interval: 10m
  chart: unsigned-app
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: oci-charts
  verify:
    provider: cosign
    secretRef:
      name: cosign-public-keys
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: untrusted
spec:
  interval: 10m
  chart: untrusted-app
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: oci-charts
  verify:
    provider: cosign
    secretRef:
      name: cosign-public-keys
`

// Charts from the OCI registry verified with cosign: a chart signed with a trusted key is
// stored; an unsigned one and one signed with another key are not.
func TestScenarioHelmOCICosign(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "helm-oci")
	g := s.g
	trusted, untrusted := newCosignKeys(t), newCosignKeys(t)

	signedDigest := servers.Registry.PushChart(t, "helm-charts", testserver.ChartSpec{Name: "signed-app", Version: "1.0.0"})
	trusted.sign(t, servers.Registry.Host()+"/helm-charts/signed-app@"+signedDigest)
	unsignedDigest := servers.Registry.PushChart(t, "helm-charts", testserver.ChartSpec{Name: "unsigned-app", Version: "1.0.0"})
	untrustedDigest := servers.Registry.PushChart(t, "helm-charts", testserver.ChartSpec{Name: "untrusted-app", Version: "1.0.0"})
	untrusted.sign(t, servers.Registry.Host()+"/helm-charts/untrusted-app@"+untrustedDigest)

	g.Expect(k8s().Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "cosign-public-keys"},
		Data:       map[string][]byte{"key1.pub": trusted.public, "README": []byte("not a key")},
	})).To(Succeed())
	s.create(ociCharts, "__REGISTRY__", servers.Registry.Host())

	signed := settled(g, helmChartGVK, s.ns, "signed", Equal("True|ChartPullSucceeded|pulled 'signed-app' chart with version '1.0.0'"), artifactRevision("1.0.0"))
	g.Expect(condition(signed, "SourceVerified")).To(Equal("True|Succeeded|verified signature of revision " + signedDigest + " with key 'key1.pub'"))
	got := httpGet(g, str(signed, "status", "artifact", "url"))
	g.Expect(got.Digest).To(Equal(str(signed, "status", "artifact", "digest")))
	g.Expect(tarFile(g, got.Body, "signed-app/Chart.yaml")).To(ContainSubstring("name: signed-app"))

	for name, digest := range map[string]string{"unsigned": unsignedDigest, "untrusted": untrustedDigest} {
		g.Eventually(conditionOf(helmChartGVK, s.ns, name, "SourceVerified"), timeout).Should(MatchRegexp(
			`^False\|VerificationError\|failed to verify the signature using provider 'cosign': no matching signatures were found for '.*@`+digest+`'`), name)
		chart := mustObject(g, helmChartGVK, s.ns, name)
		g.Expect(condition(chart, "Ready")).To(HavePrefix("False|"), name)
		g.Expect(chart.Object["status"]).NotTo(HaveKey("artifact"), "%s: a chart that no key verifies is not stored", name)
	}
}

// cosignKeys is a cosign key pair made with cosign's own code, as `cosign generate-key-pair`.
type cosignKeys struct {
	public, private []byte
}

var cosignPassword = []byte("e2e")

func newCosignKeys(t *testing.T) cosignKeys {
	t.Helper()
	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return cosignPassword, nil })
	if err != nil {
		t.Fatalf("generating a cosign key pair: %v", err)
	}
	return cosignKeys{public: keys.PublicBytes, private: keys.PrivateBytes}
}

// sign signs the manifest at ref ("<host>/<repo>@sha256:...") and pushes the signature to its
// `sha256-<hex>.sig` tag, as `cosign sign --key --tlog-upload=false` does.
func (k cosignKeys) sign(t *testing.T, ref string) {
	t.Helper()
	digest, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := cosign.LoadPrivateKey(k.private, cosignPassword, nil)
	if err != nil {
		t.Fatalf("loading the private key: %v", err)
	}
	body, err := (&payload.Cosign{Image: digest}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := sv.SignMessage(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	ociSig, err := static.NewSignature(body, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		t.Fatal(err)
	}
	ro := ociremote.WithRemoteOptions(servers.Registry.RemoteOptions()...)
	se, err := ociremote.SignedEntity(digest, ro)
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(digest.Context(), signed, ro); err != nil {
		t.Fatalf("pushing the signature of %s: %v", ref, err)
	}
}
