package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// BenchmarkGitRepositoriesProcess runs the source-controller binary (bin/, `make build`) with
// --concurrent=10 and 1,000 GitRepositories of one repository (200 files) on the local Git
// server: the time and the controller's CPU until all are Ready with an artifact, then the
// controller's CPU per object when every one is asked to reconcile again with nothing new
// upstream (ls-remote, no clone). It reports the controller's peak RSS and what it grew by per
// GitRepository. SLUICE_BENCH_GITREPOS changes the number (10000 for the ten times larger run).
//
//	go test -run '^$' -bench GitRepositoriesProcess -benchtime 1x .
func BenchmarkGitRepositoriesProcess(b *testing.B) {
	repos := benchCount(b, "SLUICE_BENCH_GITREPOS", 1000)
	server := testserver.NewGitServer(b, testserver.Options{})
	repo := server.NewRepo(b, "bench")
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("deploy/app-%02d/cm-%03d.yaml", i%20, i)] = fmt.Sprintf("kind: ConfigMap\nmetadata:\n  name: cm-%d\n", i)
	}
	repo.Commit(b, "Initial commit", files)
	dir := b.TempDir()
	c := startController(b, "source-controller", kubeconfigIn(b, dir), dir, append(profileArgs(), "--concurrent=10")...)
	k8s := sourceClient(b)
	ctx := context.Background()
	idle := usage(b, c)
	for b.Loop() {
		ns := newBenchNamespace(b)
		deleteWhenDone(b, k8s, &sourcev1.GitRepository{}, &sourcev1.GitRepositoryList{}, ns)
		ready := func(request string) func(client.Object) bool {
			return func(o client.Object) bool {
				r := o.(*sourcev1.GitRepository)
				return conditions.IsTrue(r, meta.ReadyCondition) && r.Status.Artifact != nil && r.Status.LastHandledReconcileAt == request
			}
		}
		fetched := watchReady(b, k8s, &sourcev1.GitRepositoryList{}, ns, ready(""))
		before := usage(b, c)
		start := time.Now()
		createGitRepositories(b, k8s, ns, repo.HTTPURL(), repos)
		fetched.wait(b, repos, benchTimeout(repos))
		afterFetch := usage(b, c)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")
		b.ReportMetric((afterFetch.CPU - before.CPU).Seconds(), "cpu-s-to-ready")

		handled := watchReady(b, k8s, &sourcev1.GitRepositoryList{}, ns, ready("noop"))

		forEach(b, repos, func(n int) error {
			obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%04d", n)}}
			patch := []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"noop"}}}`)
			return k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))
		})
		handled.wait(b, repos, benchTimeout(repos))
		after := usage(b, c)
		b.ReportMetric(float64((after.CPU-afterFetch.CPU).Microseconds())/1000/float64(repos), "cpu-ms/noop")
		reportMemory(b, idle, after, repos)
		saveHeapProfile(b, c)
	}
}

// createGitRepositories creates n GitRepositories repo-0000... of url in ns, 20 at a time.
func createGitRepositories(b testing.TB, c client.Client, ns, url string, n int) {
	forEach(b, n, func(i int) error {
		return c.Create(context.Background(), &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%04d", i)},
			Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Hour}}})
	})
}

// forEach runs f for 0..n-1, 20 at a time, as a client applying a list would.
func forEach(b testing.TB, n int, f func(int) error) {
	var g errgroup.Group
	g.SetLimit(20)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	NewWithT(b).Expect(g.Wait()).To(Succeed())
}
