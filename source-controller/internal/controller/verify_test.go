package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/cosign/cosigntest"
	"github.com/sluice-gitops/sluice/shared/testenv"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// ociCondition is "status|reason|message" of an OCIRepository condition once the status
// reflects the current reconcile request.
func ociCondition(key client.ObjectKey, condType string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getOCIRepo(g, key)
		if obj.Annotations[meta.ReconcileRequestAnnotation] != obj.Status.LastHandledReconcileAt {
			return "not observed yet"
		}
		if c := conditions.Get(obj, condType); c != nil {
			return string(c.Status) + "|" + c.Reason + "|" + c.Message
		}
		return ""
	}
}

// pokeObject asks for a reconcile now, as `flux reconcile` does.
func pokeObject(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Poke(t, k8s, obj)
}

func digestRef(t *testing.T, reg *testserver.Registry, repo, digest string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(reg.Host() + "/" + repo + "@" + digest)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// spec.verify with cosign public keys (docs/helmchart.md): a chart signed by a trusted key is pulled and
// SourceVerified=True; a newer chart that is unsigned, or signed by a key not in the Secret, is
// refused (SourceVerified=False) and the verified chart stays the artifact.
func TestHelmChartCosignVerification(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	opts := registry.RemoteOptions()
	trusted, stranger := cosigntest.NewKeyPair(t), cosigntest.NewKeyPair(t)
	d1 := registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	trusted.Sign(t, digestRef(t, registry, "charts/podinfo", d1), opts...)

	createSecret(t, ns, "oci-auth", map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})
	createSecret(t, ns, "cosign-public-keys", map[string][]byte{"key1.pub": trusted.Public})
	createHelmRepo(t, ns, "podinfo", sourcev1.HelmRepositorySpec{
		URL: "oci://" + registry.Host() + "/charts", Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
		SecretRef: &meta.LocalObjectReference{Name: "oci-auth"},
	})
	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "podinfo", Version: ">=6.0.0",
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"},
		Verify:    &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "cosign-public-keys"}},
	})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
	g.Expect(chartCondition(key, sourcev1.SourceVerifiedCondition)(g)).To(Equal(
		"True|Succeeded|verified signature of revision " + d1 + " with key 'key1.pub'"))

	// Unsigned: refused, the verified chart stays.
	registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "6.1.0"})
	pokeObject(t, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}})
	g.Eventually(chartCondition(key, sourcev1.SourceVerifiedCondition), timeout).Should(And(
		HavePrefix("False|VerificationError|failed to verify the signature using provider 'cosign': no matching signatures were found for '"),
		ContainSubstring("/charts/podinfo@sha256:")))
	g.Expect(chartCondition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|VerificationError|"))
	g.Expect(getChart(g, key).Status.Artifact.Revision).To(Equal("6.0.3"))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix("Warning VerificationError: failed to verify")))

	// Signed by a key the Secret does not hold: refused too.
	d3 := registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "6.2.0"})
	stranger.Sign(t, digestRef(t, registry, "charts/podinfo", d3), opts...)
	pokeObject(t, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}})
	g.Eventually(chartCondition(key, sourcev1.SourceVerifiedCondition), timeout).Should(ContainSubstring("@" + d3))
	g.Expect(chartCondition(key, sourcev1.SourceVerifiedCondition)(g)).To(HavePrefix("False|VerificationError|"))
	g.Expect(getChart(g, key).Status.Artifact.Revision).To(Equal("6.0.3"))

	// The author's new key is added to the Secret: 6.2.0 verifies and becomes the artifact.
	s := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cosign-public-keys"}, s)).To(Succeed())
	s.Data["key2.pub"] = stranger.Public
	g.Expect(k8s.Update(context.Background(), s)).To(Succeed())
	pokeObject(t, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.2.0'"))
	g.Expect(chartCondition(key, sourcev1.SourceVerifiedCondition)(g)).To(Equal(
		"True|Succeeded|verified signature of revision " + d3 + " with key 'key2.pub'"))
}

// Charts from an HTTP HelmRepository carry no cosign signature: spec.verify stalls with a
// message that says what to do.
func TestHelmChartVerifyNeedsAnOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createHelmRepo(t, ns, "podinfo", sourcev1.HelmRepositorySpec{URL: repo.URL()})
	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart:     "podinfo",
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"},
		Verify:    &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "keys"}},
	})
	g.Eventually(chartCondition(key, meta.StalledCondition), timeout).Should(Equal("True|VerificationError|failed to verify the signature using provider 'cosign': " +
		"charts from HelmRepository 'podinfo' (an HTTP repository) carry no cosign signature, only charts from a HelmRepository of type 'oci' can be verified: remove spec.verify"))
	g.Expect(getChart(g, key).Status.Artifact).To(BeNil())
}

// OCIRepository with verify: a signed artifact is stored; an unsigned one, one signed by another
// key, and one carrying a signature moved from another artifact are refused and the verified
// artifact stays served.
func TestOCIRepositoryCosignVerification(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	opts := registry.RemoteOptions()
	trusted, stranger := cosigntest.NewKeyPair(t), cosigntest.NewKeyPair(t)
	good := registry.PushArtifact(t, "manifests/app:good", map[string]string{"app.yaml": "v: 1\n"}, nil)
	trusted.Sign(t, digestRef(t, registry, "manifests/app", good), opts...)
	registry.PushArtifact(t, "manifests/app:unsigned", map[string]string{"app.yaml": "v: 2\n"}, nil)
	other := registry.PushArtifact(t, "manifests/app:other", map[string]string{"app.yaml": "v: 3\n"}, nil)
	stranger.Sign(t, digestRef(t, registry, "manifests/app", other), opts...)
	tampered := registry.PushArtifact(t, "manifests/app:tampered", map[string]string{"app.yaml": "v: evil\n"}, nil)
	trusted.SignClaiming(t, digestRef(t, registry, "manifests/app", tampered), digestRef(t, registry, "manifests/app", good), opts...)

	auth := base64.StdEncoding.EncodeToString([]byte("bob:s3cret"))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{registry.Host(): map[string]string{"auth": auth}}})
	createSecret(t, ns, "regcred", map[string][]byte{".dockerconfigjson": config})
	createSecret(t, ns, "cosign-public-keys", map[string][]byte{"team.pub": trusted.Public})
	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: sourcev1.OCIRepositorySpec{
		URL: "oci://" + registry.Host() + "/manifests/app", Insecure: true, Reference: &sourcev1.OCIRepositoryRef{Tag: "good"},
		SecretRef: &meta.LocalObjectReference{Name: "regcred"}, Interval: metav1.Duration{Duration: time.Hour},
		Verify: &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "cosign-public-keys"}},
	}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(ociRevision(key), timeout).Should(Equal("good@" + good))
	g.Expect(ociCondition(key, sourcev1.SourceVerifiedCondition)(g)).To(Equal("True|Succeeded|verified signature of revision " + good + " with key 'team.pub'"))
	served := fetchArtifactOf(t, getOCIRepo(g, key).Status.Artifact)

	for _, tag := range []string{"unsigned", "other", "tampered"} {
		o := getOCIRepo(g, key)
		p := client.MergeFrom(o.DeepCopy())
		o.Spec.Reference.Tag = tag
		g.Expect(k8s.Patch(context.Background(), o, p)).To(Succeed())
		g.Eventually(func(g Gomega) string {
			o := getOCIRepo(g, key)
			c := conditions.Get(o, sourcev1.SourceVerifiedCondition)
			if c == nil || c.ObservedGeneration != o.Generation {
				return ""
			}
			return string(c.Status) + "|" + c.Reason + "|" + c.Message
		}, timeout).Should(HavePrefix("False|VerificationError|failed to verify the signature using provider 'cosign': no matching signatures were found for '"), tag)
		o = getOCIRepo(g, key)
		g.Expect(o.Status.Artifact.Revision).To(Equal("good@"+good), tag)
		g.Expect(conditions.Get(o, meta.ReadyCondition).Reason).To(Equal(sourcev1.VerificationErrorReason), tag)
		g.Expect(fetchArtifactOf(t, o.Status.Artifact)).To(Equal(served), "the verified artifact stays served (%s)", tag)
	}

	// Without verify, the same unsigned artifact is stored and SourceVerified goes away.
	o := getOCIRepo(g, key)
	p := client.MergeFrom(o.DeepCopy())
	o.Spec.Verify = nil
	g.Expect(k8s.Patch(context.Background(), o, p)).To(Succeed())
	g.Eventually(ociRevision(key), timeout).Should(HavePrefix("tampered@"))
	g.Eventually(func(g Gomega) bool {
		return conditions.Get(getOCIRepo(g, key), sourcev1.SourceVerifiedCondition) == nil
	}, timeout).Should(BeTrue())
}

// Keyless verification would need the public Sigstore services: admission refuses it and says
// what to set instead.
func TestVerifyKeylessIsRefusedAtAdmission(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	verify := &sourcev1.OCIRepositoryVerification{Provider: "cosign"}
	chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keyless"}, Spec: sourcev1.HelmChartSpec{
		Chart: "podinfo", Interval: metav1.Duration{Duration: time.Hour}, Verify: verify,
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"},
	}}
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keyless"}, Spec: sourcev1.OCIRepositorySpec{
		URL: "oci://example.com/app", Interval: metav1.Duration{Duration: time.Hour}, Verify: verify,
	}}
	for _, obj := range []client.Object{chart, repo} {
		err := k8s.Create(context.Background(), obj)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("keyless verification is not supported (it needs the public Sigstore services): set verify.secretRef to a Secret holding the cosign public keys (*.pub)"))
	}
	verify.Provider = "notation"
	verify.SecretRef = &meta.LocalObjectReference{Name: "keys"}
	err := k8s.Create(context.Background(), repo)
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Contains(err.Error(), `supported values: "cosign"`)).To(BeTrue(), err.Error())
}
