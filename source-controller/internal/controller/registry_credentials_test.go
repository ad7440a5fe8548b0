package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
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

// dockerConfigSecret is the data of a kubernetes.io/dockerconfigjson Secret whose entries map
// a key to "user:password", as `kubectl create secret docker-registry` writes them.
func dockerConfigSecret(entries map[string]string) map[string][]byte {
	auths := map[string]any{}
	for key, userPassword := range entries {
		auths[key] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(userPassword))}
	}
	raw, _ := json.Marshal(map[string]any{"auths": auths})
	return map[string][]byte{corev1.DockerConfigJsonKey: raw}
}

// An OCIRepository's spec.secretRef may name its registry by URL ("https://host"), as `docker
// login` and Flux users write it; an entry for a longer path of another repository does not
// serve it. A Secret with no entry for the repository says so.
func TestOCIRepositoryDockerConfigKeys(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	d := registry.PushArtifact(t, "manifests/app:1.0.0", map[string]string{"app.yaml": "auth\n"}, nil)
	createSecret(t, ns, "https-key", dockerConfigSecret(map[string]string{
		"https://" + registry.Host():         "bob:s3cret",
		registry.Host() + "/manifests/other": "bob:wrong",
	}))
	createSecret(t, ns, "other-registry", dockerConfigSecret(map[string]string{"https://ghcr.io": "bob:s3cret"}))
	create := func(name, secret string) client.ObjectKey {
		obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: sourcev1.OCIRepositorySpec{
			URL: "oci://" + registry.Host() + "/manifests/app", Insecure: true, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.OCIRepositoryRef{Tag: "1.0.0"}, SecretRef: &meta.LocalObjectReference{Name: secret},
		}}
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		return client.ObjectKeyFromObject(obj)
	}

	key := create("https-key", "https-key")
	g.Eventually(ociRevision(key), timeout).Should(Equal("1.0.0@" + d))
	g.Expect(fetchArtifactOf(t, getOCIRepo(g, key).Status.Artifact)).To(HaveKeyWithValue("app.yaml", "auth\n"))

	other := create("other-registry", "other-registry")
	g.Eventually(func(g Gomega) string {
		obj := getOCIRepo(g, other)
		return conditions.GetReason(obj, sourcev1.FetchFailedCondition) + "|" + conditions.GetMessage(obj, sourcev1.FetchFailedCondition)
	}, timeout).Should(Equal(sourcev1.AuthenticationFailedReason + "|secret '" + ns + "/other-registry' has no credentials for '" +
		registry.Host() + "/manifests/app'"))
}

// A HelmRepository of type oci takes a docker-config Secret as spec.secretRef too, as Flux's
// does, with its registry named by URL: its charts are pulled with those credentials.
func TestHelmChartFromOCIRepositoryWithDockerConfig(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "6.1.0"})
	createSecret(t, ns, "oci-auth", dockerConfigSecret(map[string]string{"https://" + registry.Host(): "bob:s3cret"}))
	createHelmRepo(t, ns, "oci", sourcev1.HelmRepositorySpec{
		URL: "oci://" + registry.Host() + "/charts", Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
		SecretRef: &meta.LocalObjectReference{Name: "oci-auth"},
	})
	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "podinfo", Version: "6.*",
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"},
	})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.1.0'"))
	g.Expect(fetchChartValues(t, getChart(g, key).Status.Artifact.URL)).NotTo(BeNil())
}
