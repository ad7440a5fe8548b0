package controller

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// The recorded costs of a GitRepository reconcile, which a slow machine cannot change: the
// requests to the Git server, the writes to the API server (reads come from the informer
// cache in the controller) and the allocations of a no-op reconcile. A Git server that is
// busy makes each request cost more, so a request put back costs every user; the test fails
// when one is. Allocations may grow by allocsMargin before it fails: what a library update
// may add, but not a new code path per reconcile.
const (
	// A first fetch of a branch: the clone alone (GET info/refs, POST git-upload-pack), no
	// ls-remote before it. Flux's source-controller makes the same two.
	firstFetchGitRequests = 2
	// A reconcile with nothing new upstream: ls-remote (GET info/refs) and no clone. Flux's: 1.
	noOpGitRequests = 1
	// The API writes of a first fetch: the finalizer (its own reconcile, as Flux's), the
	// Reconciling status, then the artifact and conditions; of a no-op, none (the status is
	// unchanged and not written).
	firstFetchAPIWrites = 3
	noOpAPIWrites       = 0
	// The allocations of a no-op reconcile on loopback, as measured when recorded.
	noOpAllocs   = 1500
	allocsMargin = 1.25
)

func TestGitRepositoryReconcileCosts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "costs")
	repo.Commit(t, "Initial commit", map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n"})

	var writes atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	ns := env.Namespace(t)
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "costs", Labels: map[string]string{directLabel: "true"}},
		Spec:       sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	r := &GitRepositoryReconciler{SourceReconciler: SourceReconciler{Client: c, EventRecorder: record.NewFakeRecorder(100), Storage: store, ControllerName: ControllerName}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}

	// The first reconcile adds the finalizer and requeues, as Flux's does, before any fetch.
	reconcileUntilReady := func() {
		t.Helper()
		for range 3 {
			_, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(k8s.Get(ctx, req.NamespacedName, obj)).To(Succeed())
			if conditions.IsTrue(obj, meta.ReadyCondition) {
				return
			}
		}
		t.Fatalf("not Ready: %v", obj.Status.Conditions)
	}
	git0, writes0 := server.Requests(), writes.Load()
	reconcileUntilReady()
	t.Logf("first fetch: %d Git requests, %d API writes", server.Requests()-git0, writes.Load()-writes0)
	g.Expect(server.Requests()-git0).To(BeEquivalentTo(firstFetchGitRequests), "Git requests of a first fetch")
	g.Expect(writes.Load()-writes0).To(BeEquivalentTo(firstFetchAPIWrites), "API writes of a first fetch")

	git0, writes0 = server.Requests(), writes.Load()
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("no-op: %d Git requests, %d API writes", server.Requests()-git0, writes.Load()-writes0)
	g.Expect(server.Requests()-git0).To(BeEquivalentTo(noOpGitRequests), "Git requests of a no-op reconcile")
	g.Expect(writes.Load()-writes0).To(BeEquivalentTo(noOpAPIWrites), "API writes of a no-op reconcile")

	allocs := testing.AllocsPerRun(5, func() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("no-op: %.0f allocations (recorded %d)", allocs, noOpAllocs)
	g.Expect(allocs).To(BeNumerically("<=", noOpAllocs*allocsMargin), "allocations of a no-op reconcile")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
