package controller

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// 200 HelmCharts on one HelmRepository of 40 charts × 5 versions, reconciled from scratch by
// the running manager against the local Helm repository: the time until all are Ready, and the
// Go heap in use of the process (controller, API client caches and test servers) at the end.
func BenchmarkHelmCharts200FromScratch(b *testing.B) {
	ctx := context.Background()
	server := testserver.NewHelmRepository(b, testserver.HelmRepoOptions{})
	for c := range 40 {
		for v := range 5 {
			server.AddChart(b, testserver.ChartSpec{Name: fmt.Sprintf("chart-%02d", c), Version: fmt.Sprintf("1.%d.0", v)})
		}
	}
	for i := range b.N {
		ns := fmt.Sprintf("bench-charts-%d-%d", time.Now().UnixNano(), i)
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		repo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
			Spec: sourcev1.HelmRepositorySpec{URL: server.URL(), Interval: metav1.Duration{Duration: time.Hour}}}
		if err := k8s.Create(ctx, repo); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for n := range 200 {
			hc := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("hc-%03d", n)},
				Spec: sourcev1.HelmChartSpec{Chart: fmt.Sprintf("chart-%02d", n%40), Version: "1.*",
					Interval:  metav1.Duration{Duration: time.Hour},
					SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"}}}
			if err := k8s.Create(ctx, hc); err != nil {
				b.Fatal(err)
			}
		}
		for {
			list := &sourcev1.HelmChartList{}
			if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			ready := 0
			for i := range list.Items {
				if conditions.IsTrue(&list.Items[i], meta.ReadyCondition) && list.Items[i].Status.Artifact != nil {
					ready++
				}
			}
			if ready == 200 {
				break
			}
			if time.Since(start) > 5*time.Minute {
				b.Fatalf("%d of 200 charts ready after 5m", ready)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
}
