package controller

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A chart over --helm-chart-max-size is refused with a condition that names the flag.
func TestHelmChartTooLarge(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
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
	ns := env.Namespace(t)
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

// A chart archive with an entry that climbs out of the chart (`../`) is refused, and the chart
// pulled before stays the artifact.
func TestHelmChartArchiveEscapingTheChart(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0"})
	createHelmRepo(t, ns, "repo", sourcev1.HelmRepositorySpec{URL: server.URL()})
	key := createChart(t, ns, "app", sourcev1.HelmChartSpec{
		Chart: "app", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"},
	})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'app' chart with version '1.0.0'"))

	// Version 1.0.1, listed in the index with its true digest, escapes the chart directory.
	evil := tarGzip(t, map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: app\nversion: 1.0.1\n",
		"app/../../../etc/passwd": "root::0:0::/:/bin/sh\n",
	})
	g.Expect(os.WriteFile(filepath.Join(server.Root(), "app-1.0.1.tgz"), evil, 0o644)).To(Succeed())
	sum := sha256.Sum256(evil)
	good, err := os.ReadFile(filepath.Join(server.Root(), "app-1.0.0.tgz"))
	g.Expect(err).NotTo(HaveOccurred())
	goodSum := sha256.Sum256(good)
	server.WriteIndex(t, []byte(fmt.Sprintf(`apiVersion: v1
entries:
  app:
  - apiVersion: v2
    name: app
    version: 1.0.1
    digest: %x
    urls: [%s/app-1.0.1.tgz]
  - apiVersion: v2
    name: app
    version: 1.0.0
    digest: %x
    urls: [%s/app-1.0.0.tgz]
generated: "2026-01-01T00:00:00Z"
`, sum, server.URL(), goodSum, server.URL())))
	pokeObject(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"}})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|ChartPullFailed|"), ContainSubstring("chart archive entry 'app/../../../etc/passwd' escapes the chart")))
	g.Expect(getChart(g, key).Status.Artifact.Revision).To(Equal("1.0.0"))
}

// tarGzip archives entries as given, unsafe names included.
func tarGzip(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for n, content := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
