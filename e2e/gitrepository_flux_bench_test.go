package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// BenchmarkGitRepositoriesSideBySide runs Flux's source-controller, then Sluice's, on the same
// API server and Git server, with the same flags (--concurrent=10): 1,000 GitRepositories of one
// repository (200 files), created 20 at a time, until all are Ready with an artifact. Each side
// reports its time, its CPU, its peak RSS and the Git server's requests per object
// (SLUICE_BENCH_GITREPOS changes the number of GitRepositories). With SLUICE_BENCH_HELMCHARTS=n,
// each side then gets n HelmCharts of one HelmRepository (40 charts × 5 versions) too, their time
// and CPU reported apart, and the peak RSS is that of both kinds. The Git
// server answers every request after SLUICE_BENCH_GIT_DELAY (e.g. 20ms; none by default), a busy
// or distant server, where a controller's speed is the number of its round trips.
//
//	make flux-source-controller build
//	cd e2e && SLUICE_BENCH_GIT_DELAY=20ms go test -run '^$' -bench GitRepositoriesSideBySide -benchtime 1x .
//	cd e2e && SLUICE_BENCH_HELMCHARTS=1000 go test -run '^$' -bench GitRepositoriesSideBySide -benchtime 1x .
func BenchmarkGitRepositoriesSideBySide(b *testing.B) {
	if _, err := os.Stat(filepath.Join(binDir, harness.FluxSourceController)); err != nil {
		b.Skipf("%s is not in bin/: `make flux-source-controller` builds it", harness.FluxSourceController)
	}
	repos := benchCount(b, "SLUICE_BENCH_GITREPOS", 1000)
	var delay time.Duration
	if v := os.Getenv("SLUICE_BENCH_GIT_DELAY"); v != "" {
		var err error
		delay, err = time.ParseDuration(v)
		NewWithT(b).Expect(err).NotTo(HaveOccurred(), "SLUICE_BENCH_GIT_DELAY")
	}
	server := testserver.NewGitServer(b, testserver.Options{Delay: delay})
	repo := server.NewRepo(b, "bench")
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("deploy/app-%02d/cm-%03d.yaml", i%20, i)] = fmt.Sprintf("kind: ConfigMap\nmetadata:\n  name: cm-%d\n", i)
	}
	repo.Commit(b, "Initial commit", files)
	k8s := sourceClient(b)
	charts := benchCount(b, "SLUICE_BENCH_HELMCHARTS", 0)
	var helm *testserver.HelmRepository
	if charts > 0 {
		helm = newBenchHelmRepository(b)
	}

	for _, name := range []string{harness.FluxSourceController, "source-controller"} {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			args := []string{"--concurrent=10"}
			if name == harness.FluxSourceController {
				args = append(args, "--enable-leader-election=false")
			} else {
				args = append(args, profileArgs()...)
			}
			c := startController(b, name, kubeconfigIn(b, dir), dir, args...)
			for b.Loop() {
				ns := newBenchNamespace(b)
				deleteWhenDone(b, k8s, &sourcev1.GitRepository{}, &sourcev1.GitRepositoryList{}, ns)
				if charts > 0 {
					// Left behind, one side's charts would be reconciled again by the other.
					deleteWhenDone(b, k8s, &sourcev1.HelmRepository{}, &sourcev1.HelmRepositoryList{}, ns)
					deleteWhenDone(b, k8s, &sourcev1.HelmChart{}, &sourcev1.HelmChartList{}, ns)
				}
				fetched := watchReady(b, k8s, &sourcev1.GitRepositoryList{}, ns, func(o client.Object) bool {
					r := o.(*sourcev1.GitRepository)
					return conditions.IsTrue(r, meta.ReadyCondition) && r.Status.Artifact != nil
				})
				before, requests := usage(b, c), server.Requests()
				start := time.Now()
				createGitRepositories(b, k8s, ns, repo.HTTPURL(), repos)
				fetched.wait(b, repos, 10*time.Minute)
				after := usage(b, c)
				b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")
				b.ReportMetric((after.CPU - before.CPU).Seconds(), "cpu-s-to-ready")
				b.ReportMetric(float64(server.Requests()-requests)/float64(repos), "git-requests/obj")
				if charts > 0 {
					start := time.Now()
					createHelmCharts(b, k8s, ns, helm.URL(), charts)
					done := usage(b, c)
					b.ReportMetric(time.Since(start).Seconds(), "s-charts-to-ready")
					b.ReportMetric((done.CPU - after.CPU).Seconds(), "cpu-s-charts")
					after = done
				}
				b.ReportMetric(float64(after.PeakRSS)/(1<<20), "peak-rss-MiB")
				if name != harness.FluxSourceController {
					saveHeapProfile(b, c)
				}
			}
		})
	}
}
