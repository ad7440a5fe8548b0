package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// BenchmarkHelmChartsProcess runs the source-controller binary (bin/, `make build`) with
// --concurrent=10, and creates 1,000 HelmCharts on one Ready HelmRepository of 40 charts × 5
// versions (a local Helm repository): the time until all are Ready with an artifact, and the
// controller's CPU time, its peak RSS and what it grew by per HelmChart. SLUICE_BENCH_HELMCHARTS
// changes the number (10000 for the ten times larger run).
//
//	go test -run '^$' -bench HelmChartsProcess -benchtime 1x .
func BenchmarkHelmChartsProcess(b *testing.B) {
	count := benchCount(b, "SLUICE_BENCH_HELMCHARTS", 1000)
	server := newBenchHelmRepository(b)
	dir := b.TempDir()
	c := startController(b, "source-controller", kubeconfigIn(b, dir), dir, append(profileArgs(), "--concurrent=10")...)
	k8s := sourceClient(b)
	idle := usage(b, c)
	for b.Loop() {
		ns := newBenchNamespace(b)
		deleteWhenDone(b, k8s, &sourcev1.HelmRepository{}, &sourcev1.HelmRepositoryList{}, ns)
		deleteWhenDone(b, k8s, &sourcev1.HelmChart{}, &sourcev1.HelmChartList{}, ns)
		before := usage(b, c)
		start := time.Now()
		createHelmCharts(b, k8s, ns, server.URL(), count)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")
		after := usage(b, c)
		b.ReportMetric((after.CPU - before.CPU).Seconds(), "cpu-s")
		reportMemory(b, idle, after, count)
		saveHeapProfile(b, c)
	}
}

// newBenchHelmRepository serves 40 charts × 5 versions.
func newBenchHelmRepository(b testing.TB) *testserver.HelmRepository {
	server := testserver.NewHelmRepository(b, testserver.HelmRepoOptions{})
	for c := range 40 {
		for v := range 5 {
			server.AddChart(b, testserver.ChartSpec{Name: fmt.Sprintf("chart-%02d", c), Version: fmt.Sprintf("1.%d.0", v)})
		}
	}
	return server
}

// createHelmCharts creates the HelmRepository repo of url in ns, waits until it is Ready, then
// creates count HelmCharts of its charts, 20 at a time, and waits until all are Ready with an
// artifact.
func createHelmCharts(b testing.TB, k8s client.WithWatch, ns, url string, count int) {
	ctx := context.Background()
	repo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
		Spec: sourcev1.HelmRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Hour}}}
	NewWithT(b).Expect(k8s.Create(ctx, repo)).To(Succeed())
	NewWithT(b).Eventually(func(g Gomega) bool {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		return conditions.IsTrue(repo, meta.ReadyCondition)
	}, time.Minute, 50*time.Millisecond).Should(BeTrue())
	charts := watchReady(b, k8s, &sourcev1.HelmChartList{}, ns, func(o client.Object) bool {
		hc := o.(*sourcev1.HelmChart)
		return conditions.IsTrue(hc, meta.ReadyCondition) && hc.Status.Artifact != nil
	})
	// Created 20 at a time: one at a time, the creation itself would take longer than the
	// controller.
	forEach(b, count, func(n int) error {
		return k8s.Create(ctx, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("hc-%04d", n)},
			Spec: sourcev1.HelmChartSpec{Chart: fmt.Sprintf("chart-%02d", n%40), Version: "1.*",
				Interval:  metav1.Duration{Duration: time.Hour},
				SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"}}})
	})
	charts.wait(b, count, benchTimeout(count))
}

// sourceClient is an admin client that knows the source kinds, with the controllers' rate
// limits, so the test's own requests do not pace the measure.
func sourceClient(b testing.TB) client.WithWatch {
	scheme := runtime.NewScheme()
	NewWithT(b).Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	NewWithT(b).Expect(sourcev1.AddToScheme(scheme)).To(Succeed())
	cfg := *env.Config
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.Timeout = 0 // the watches of the benchmarks last as long as they do
	c, err := client.NewWithWatch(&cfg, client.Options{Scheme: scheme})
	NewWithT(b).Expect(err).NotTo(HaveOccurred())
	return c
}
