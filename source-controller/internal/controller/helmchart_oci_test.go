package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A chart from an OCI HelmRepository behind basic auth: the newest tag in range is pulled with
// Helm's registry client; a range matching no tag stalls with Flux's message.
func TestHelmChartFromOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "6.1.0"})
	registry.PushChart(t, "charts", testserver.ChartSpec{Name: "podinfo", Version: "7.0.0-rc.1"})
	createSecret(t, ns, "oci-auth", map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})
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

	setChartVersion(t, key, "9.*")
	g.Eventually(chartCondition(key, meta.StalledCondition), timeout).Should(Equal(
		"True|InvalidChartReference|invalid chart reference: failed to get chart version for remote reference: no 'podinfo' chart with version matching '9.*' found"))
	g.Expect(getChart(g, key).Status.Artifact.Revision).To(Equal("6.1.0"))
}
