package controller

import (
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A chart over --helm-chart-max-size is refused with a condition that names the flag.
func TestHelmChartTooLarge(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	noise := make([]byte, 3*chartMaxSize)
	_, _ = rand.Read(noise)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "huge", Version: "1.0.0",
		Files: map[string]string{"files/blob.txt": base64.StdEncoding.EncodeToString(noise)}})
	createHelmRepo(t, ns, "repo", sourcev1.HelmRepositorySpec{URL: server.URL()})
	key := createChart(t, ns, "huge", sourcev1.HelmChartSpec{
		Chart: "huge", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"},
	})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|ChartPullFailed|"), ContainSubstring("--helm-chart-max-size")))
	g.Expect(getChart(g, key).Status.Artifact).To(BeNil())
}

// A chart in Git with a dependency that is not vendored stalls with a message naming it.
func TestHelmChartUnresolvedDependency(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "charts")
	dir := t.TempDir()
	testserver.WriteChartDir(t, dir, testserver.ChartSpec{Name: "app", Version: "1.0.0", Dependencies: []*chart.Dependency{
		{Name: "redis", Version: "17.x", Repository: "https://charts.example.com/"},
	}})
	repo.Commit(t, "Add the chart", chartFiles(t, dir, "app"))
	createRepo(t, ns, "charts", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	key := createChart(t, ns, "app", sourcev1.HelmChartSpec{
		Chart: "app", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "charts"},
	})
	g.Eventually(chartCondition(key, meta.StalledCondition), timeout).Should(And(
		HavePrefix("True|ChartPackageFailed|"), ContainSubstring("redis")))
}
