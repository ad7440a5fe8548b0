package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// With --helm-cache-max-size, charts of one repository resolve through one opened index:
// the second chart is a cache hit, seen on gotk_cache_events_total as in Flux.
func TestHelmChartsShareTheIndexCache(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	server.AddChart(t, testserver.ChartSpec{Name: "redis", Version: "1.2.0"})
	createHelmRepo(t, ns, "charts", sourcev1.HelmRepositorySpec{URL: server.URL()})

	hits := func() float64 { return testutil.ToFloat64(cacheEvents.WithLabelValues("cache_hit")) }
	misses := func() float64 { return testutil.ToFloat64(cacheEvents.WithLabelValues("cache_miss")) }
	first := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{Chart: "podinfo",
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}})
	g.Eventually(chartCondition(first, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	hitsBefore := hits()
	repo := &sourcev1.HelmRepository{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "charts"}, repo)).To(Succeed())
	g.Expect(indexCache.Has(store.LocalPath(*repo.Status.Artifact))).To(BeTrue(), "the index is cached after the first chart")

	second := createChart(t, ns, "redis", sourcev1.HelmChartSpec{Chart: "redis",
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}})
	g.Eventually(chartCondition(second, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'redis' chart with version '1.2.0'"))
	g.Expect(hits()).To(BeNumerically(">", hitsBefore))
	g.Expect(misses()).To(BeNumerically(">", 0))
}

// HelmCharts that resolve to the same archive share one download (--helm-chart-cache-max-size).
func TestHelmChartsShareTheDownloadOfAChart(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createHelmRepo(t, ns, "charts", sourcev1.HelmRepositorySpec{URL: server.URL()})

	var charts []client.ObjectKey
	for i := range 10 {
		charts = append(charts, createChart(t, ns, fmt.Sprintf("podinfo-%d", i), sourcev1.HelmChartSpec{Chart: "podinfo",
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}))
	}
	for _, key := range charts {
		g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
	}
	g.Expect(server.Requests("/podinfo-6.0.3.tgz")).To(Equal(1))
}
