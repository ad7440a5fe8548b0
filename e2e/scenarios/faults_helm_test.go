package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

const faultHelmRepository = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
spec:
  interval: 1s
  timeout: 10s
  url: __HELM__
`

const faultHelmChart = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: __NAME__
spec:
  interval: 2s
  chart: __CHART__
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: charts
`

// addChartBehind publishes a chart version and rewrites the index so that its chart URLs go
// through the proxy too (the repository writes absolute URLs of its own address): with the
// proxy down, the whole repository is gone, index and charts.
func addChartBehind(t *testing.T, repo *testserver.HelmRepository, proxy *harness.Proxy, name, version string) {
	t.Helper()
	repo.AddChart(t, testserver.ChartSpec{Name: name, Version: version})
	index, err := os.ReadFile(filepath.Join(repo.Root(), "index.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	repo.WriteIndex(t, []byte(strings.ReplaceAll(string(index), repo.URL(), proxy.URL(repo.URL()))))
}

// artifactKept checks that a source still has the artifact it had, and that the artifact server
// still serves it.
func artifactKept(g Gomega, obj *unstructured.Unstructured, revision, digest string) {
	g.Expect(str(obj, "status", "artifact", "revision")).To(Equal(revision), "%s %s", obj.GetKind(), obj.GetName())
	g.Expect(str(obj, "status", "artifact", "digest")).To(Equal(digest), "%s %s", obj.GetKind(), obj.GetName())
	got := httpGet(g, str(obj, "status", "artifact", "url"))
	g.Expect(got.Status).To(Equal(200), "%s %s", obj.GetKind(), obj.GetName())
	g.Expect(got.Digest).To(Equal(digest), "%s %s", obj.GetKind(), obj.GetName())
}

// The Helm repository goes away and comes back. Meanwhile the HelmRepository reports the failed
// index download and keeps its index artifact, the HelmChart stays Ready with its chart artifact, and a
// HelmChart created during the outage, which finds its version in the kept index, reports the
// failed chart download (of a chart nobody pulled before: one already pulled is shared from
// memory, see --helm-chart-cache-max-size). A version published during the outage is pulled by both charts once
// the repository is back. A repository of its own, behind a proxy, so that the outage is this
// scenario's only. Not parallel, as the Git outage.
func TestScenarioFaultHelmRepositoryGoesAwayAndComesBack(t *testing.T) {
	s := newScenario(t, "fault-helm")
	g := s.g
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	proxy := startProxy(t, repo.URL())
	url := proxy.URL(repo.URL())
	addChartBehind(t, repo, proxy, "fault-app", "1.0.0")
	addChartBehind(t, repo, proxy, "fault-late", "1.0.0")
	s.create(faultHelmRepository, "__HELM__", url)
	s.create(faultHelmChart, "__NAME__", "app", "__CHART__", "fault-app")

	index := settled(g, helmRepositoryGVK, s.ns, "charts", HavePrefix("True|Succeeded|"), nil)
	indexRevision, indexDigest := str(index, "status", "artifact", "revision"), str(index, "status", "artifact", "digest")
	chart := settled(g, helmChartGVK, s.ns, "app", Equal("True|ChartPullSucceeded|pulled 'fault-app' chart with version '1.0.0'"), artifactRevision("1.0.0"))
	chartDigest := str(chart, "status", "artifact", "digest")

	proxy.Down()
	t.Logf("Helm repository gone")
	// Reported: the index cannot be downloaded, from that URL, and why.
	g.Eventually(readyOf(helmRepositoryGVK, s.ns, "charts"), timeout).Should(And(
		HavePrefix("False|IndexationFailed|"), ContainSubstring(url+"/index.yaml"), ContainSubstring("connection refused")))

	// A chart asked for during the outage: its version is in the kept index, its archive cannot
	// be downloaded. (It has never succeeded, so no observedGeneration: read Ready as it is.)
	s.create(faultHelmChart, "__NAME__", "late", "__CHART__", "fault-late")
	g.Eventually(conditionOf(helmChartGVK, s.ns, "late", "Ready"), timeout).Should(And(
		HavePrefix("False|ChartPullFailed|"), ContainSubstring(url+"/fault-late-1.0.0.tgz"), ContainSubstring("connection refused")))

	// Kept, for a few intervals: both artifacts, in the status and on the artifact server.
	g.Consistently(func(g Gomega) {
		index := mustObject(g, helmRepositoryGVK, s.ns, "charts")
		g.Expect(condition(index, "Ready")).To(HavePrefix("False|IndexationFailed|"))
		artifactKept(g, index, indexRevision, indexDigest)
		chart := mustObject(g, helmChartGVK, s.ns, "app")
		g.Expect(ready(chart)).To(Equal("True|ChartPullSucceeded|pulled 'fault-app' chart with version '1.0.0'"), "its version is in the kept index")
		artifactKept(g, chart, "1.0.0", chartDigest)
	}, 4*time.Second, 500*time.Millisecond).Should(Succeed())

	// Back, with the version published meanwhile: both charts pull it.
	addChartBehind(t, repo, proxy, "fault-app", "1.1.0")
	addChartBehind(t, repo, proxy, "fault-late", "1.1.0")
	g.Expect(proxy.Up()).To(Succeed())
	t.Logf("Helm repository back")
	settled(g, helmRepositoryGVK, s.ns, "charts", HavePrefix("True|Succeeded|"), func(g Gomega, obj *unstructured.Unstructured) {
		g.Expect(str(obj, "status", "artifact", "revision")).NotTo(Equal(indexRevision))
	})
	for name, chartName := range map[string]string{"app": "fault-app", "late": "fault-late"} {
		chart := settled(g, helmChartGVK, s.ns, name, Equal("True|ChartPullSucceeded|pulled '"+chartName+"' chart with version '1.1.0'"), artifactRevision("1.1.0"))
		got := httpGet(g, str(chart, "status", "artifact", "url"))
		g.Expect(got.Digest).To(Equal(str(chart, "status", "artifact", "digest")))
	}
}
