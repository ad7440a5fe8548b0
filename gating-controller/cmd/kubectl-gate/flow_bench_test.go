package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/browsertest"
)

// flowAtScale creates, in a new namespace, a closed gate and 1,000 GitRepositories each read by
// a ManifestGeneration behind the gate (held, with a revision waiting): the size at which the
// flow page must stay fast. It returns the namespace.
func flowAtScale(b *testing.B) string {
	b.Helper()
	ns := env.Namespace(b)
	gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "freeze"},
		Spec: gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed}}
	if err := env.Client.Create(context.Background(), gate); err != nil {
		b.Fatal(err)
	}
	objects := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	var failed error
	var once sync.Once
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range objects {
				if err := env.Client.Create(context.Background(), obj); err != nil {
					once.Do(func() { failed = err })
				}
			}
		}()
	}
	for i := range 1000 {
		objects <- testenv.FromYAML(b, ns, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo-%d}
spec: {interval: 10m, url: "https://git.example.com/repo-%d.git"}
`, i, i))
		objects <- testenv.FromYAML(b, ns, fmt.Sprintf(`apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: app-%d}
spec:
  sourceRef: {kind: GitRepository, name: repo-%d}
  path: ./
  serviceAccountName: apps
  interval: 1m
  gates: {refs: [freeze]}
`, i, i))
	}
	close(objects)
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	return ns
}

// BenchmarkFlowAPI1000Sources1000Consumers is the page's data at 1,000 sources and 1,000
// consumers, read from `kubectl gate ui` as the page reads it after a change (the watches are
// warm; the viewer's rights are cached for accessTTL). The target is under 500 ms per read.
func BenchmarkFlowAPI1000Sources1000Consumers(b *testing.B) {
	ns := flowAtScale(b)
	url := startUI(b, "-n", ns)
	deadline := time.Now().Add(2 * time.Minute)
	for len(getFlow(b, url).Nodes) < 3000 { // 1,000 sources, their upstreams and 1,000 consumers
		if time.Now().After(deadline) {
			b.Fatal("the flow did not reach 3,000 nodes in 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := http.Get(url + "api/flow")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := res.Body.Read(make([]byte, 1))
		for buf := make([]byte, 64<<10); ; {
			if _, err := res.Body.Read(buf); err != nil {
				break
			}
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("api/flow: %s", res.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/read")
}

// BenchmarkFlowPage1000Sources1000Consumers is the flow page at 1,000 sources and 1,000
// consumers in headless Chromium, loaded afresh each time: page is from the navigation to the
// drawn graph (the page, its script and the data fetched, the graph built and laid out), render
// the drawing alone (User Timing "flow-render", set by the page). The target is a page under 1 s.
func BenchmarkFlowPage1000Sources1000Consumers(b *testing.B) {
	ns := flowAtScale(b)
	url := startUI(b, "-n", ns)
	ctx := browsertest.New(b, 1280, 1024)
	var page, render float64
	for b.Loop() {
		if _, err := chromedp.Run(ctx, chromedp.Navigate(url+"flow.html")); err != nil {
			b.Fatal(err)
		}
		var timing []float64
		for deadline := time.Now().Add(2 * time.Minute); len(timing) == 0; {
			if time.Now().After(deadline) {
				b.Fatal("the page did not draw the flow in 2 minutes")
			}
			// The first drawing with every node: the events stream may redraw before the
			// watches have listed everything.
			t, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
				const m = performance.getEntriesByName("flow-render");
				const nodes = document.querySelectorAll("#graph [data-id]").length;
				return m.length && nodes >= 3000 ? [m[0].startTime + m[0].duration, m[0].duration] : [];
			})()`))
			if err != nil {
				b.Fatal(err)
			}
			timing = t
			time.Sleep(20 * time.Millisecond)
		}
		page += timing[0]
		render += timing[1]
	}
	b.ReportMetric(page/float64(b.N), "ms/page")
	b.ReportMetric(render/float64(b.N), "ms/render")
}
