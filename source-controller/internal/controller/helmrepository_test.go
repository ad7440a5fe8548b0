package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

func getHelmRepo(g Gomega, key client.ObjectKey) *sourcev1.HelmRepository {
	obj := &sourcev1.HelmRepository{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

func createHelmRepo(t *testing.T, ns, name string, spec sourcev1.HelmRepositorySpec) client.ObjectKey {
	t.Helper()
	if spec.Interval.Duration == 0 {
		spec.Interval = metav1.Duration{Duration: time.Hour}
	}
	obj := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

// helmRepoState is "Ready status|reason|message" once the status caught up with the request.
func helmRepoState(key client.ObjectKey, condType string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getHelmRepo(g, key)
		if obj.Annotations[meta.ReconcileRequestAnnotation] != obj.Status.LastHandledReconcileAt ||
			obj.Status.ObservedGeneration != obj.Generation && condType == meta.ReadyCondition {
			return "not observed yet"
		}
		for _, c := range obj.Status.Conditions {
			if c.Type == condType {
				return string(c.Status) + "|" + c.Reason + "|" + c.Message
			}
		}
		return ""
	}
}

func pokeHelmRepo(t *testing.T, key client.ObjectKey) {
	t.Helper()
	g := NewWithT(t)
	obj := getHelmRepo(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().Format(time.RFC3339Nano)}
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
}

func sha256File(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// The index is fetched behind basic auth and stored in the compact form charts resolve from;
// an unchanged index costs one 304; a new chart version gives a new revision.
func TestHelmRepositoryFetchesTheIndex(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{Username: "helm", Password: "s3cret"})
	repo.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "5.2.1"})
	repo.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createSecret(t, ns, "helm-auth", map[string][]byte{"username": []byte("helm"), "password": []byte("s3cret")})
	key := createHelmRepo(t, ns, "podinfo", sourcev1.HelmRepositorySpec{
		URL: repo.URL(), SecretRef: &meta.LocalObjectReference{Name: "helm-auth"},
	})

	indexRev := sha256File(t, repo.Root()+"/index.yaml")
	g.Eventually(helmRepoState(key, meta.ReadyCondition), timeout).
		Should(Equal("True|Succeeded|stored artifact: revision '" + indexRev + "'"))
	obj := getHelmRepo(g, key)
	g.Expect(obj.Status.URL).To(HaveSuffix("/helmrepository/" + ns + "/podinfo/index.idx"))
	v, err := index.Resolve(store.LocalPath(*obj.Status.Artifact), "podinfo", "5.*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Version).To(Equal("5.2.1"))
	_, err = index.Resolve(store.LocalPath(*obj.Status.Artifact), "podinfo", "9.*")
	g.Expect(err).To(MatchError("no 'podinfo' chart with version matching '9.*' found"))

	pokeHelmRepo(t, key)
	g.Eventually(func() int { return repo.NotModified("/index.yaml") }, timeout).Should(Equal(1))
	g.Eventually(helmRepoState(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	g.Expect(getHelmRepo(g, key).Status.Artifact).To(Equal(obj.Status.Artifact))

	repo.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.1.0"})
	pokeHelmRepo(t, key)
	newRev := sha256File(t, repo.Root()+"/index.yaml")
	g.Eventually(func(g Gomega) string { return getHelmRepo(g, key).Status.Artifact.Revision }, timeout).Should(Equal(newRev))
}

// Bad credentials, a malformed index and an index over --helm-index-max-size: a condition that
// says so, and the previous artifact stays.
func TestHelmRepositoryBadInputKeepsTheArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	key := createHelmRepo(t, ns, "bad", sourcev1.HelmRepositorySpec{URL: repo.URL()})
	g.Eventually(helmRepoState(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	good := getHelmRepo(g, key).Status.Artifact

	repo.WriteIndex(t, []byte("apiVersion: v1\nentries: [this is: not: valid\n"))
	pokeHelmRepo(t, key)
	g.Eventually(helmRepoState(key, sourcev1.FetchFailedCondition), timeout).Should(And(
		HavePrefix("True|IndexationFailed|Helm repository index '" + repo.URL() + "/index.yaml' is not usable:")))
	g.Expect(getHelmRepo(g, key).Status.Artifact).To(Equal(good))

	repo.WriteIndex(t, make([]byte, helmIndexMaxSize+1))
	pokeHelmRepo(t, key)
	g.Eventually(helmRepoState(key, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|IndexationFailed|Helm repository index '" + repo.URL() + "/index.yaml' is larger than --helm-index-max-size (1048576 bytes)"))
	g.Expect(getHelmRepo(g, key).Status.Artifact).To(Equal(good))

	private := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{Username: "helm", Password: "s3cret"})
	private.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createSecret(t, ns, "wrong", map[string][]byte{"username": []byte("helm"), "password": []byte("wrong")})
	denied := createHelmRepo(t, ns, "denied", sourcev1.HelmRepositorySpec{URL: private.URL(), SecretRef: &meta.LocalObjectReference{Name: "wrong"}})
	g.Eventually(helmRepoState(denied, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|AuthenticationFailed|failed to fetch Helm repository index '" + private.URL() + "/index.yaml': 401 Unauthorized"))
}

// HTTPS with the CA of certSecretRef.
func TestHelmRepositoryTLS(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{TLS: true})
	repo.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createSecret(t, ns, "ca", map[string][]byte{"ca.crt": repo.CAPEM()})
	key := createHelmRepo(t, ns, "tls", sourcev1.HelmRepositorySpec{URL: repo.URL(), CertSecretRef: &meta.LocalObjectReference{Name: "ca"}})
	g.Eventually(helmRepoState(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|Succeeded|"))
}

// An OCI HelmRepository has no index: it is ready, charts resolve from the registry.
func TestHelmRepositoryOCI(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	key := createHelmRepo(t, ns, "oci", sourcev1.HelmRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts", Type: sourcev1.HelmRepositoryTypeOCI})
	g.Eventually(helmRepoState(key, meta.ReadyCondition), timeout).Should(Equal(
		"True|Succeeded|Helm repository of type oci: charts are resolved from the registry by each HelmChart"))

	bad := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mismatch"},
		Spec:       sourcev1.HelmRepositorySpec{URL: "oci://ghcr.io/x", Interval: metav1.Duration{Duration: time.Minute}},
	}
	err := k8s.Create(context.Background(), bad)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("an oci:// URL needs type: oci"))
}
