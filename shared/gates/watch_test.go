package gates_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/internal/testapi"
)

// recorder is a consumer reconciler that only records when each consumer was reconciled.
type recorder struct {
	mu   sync.Mutex
	seen map[types.NamespacedName][]time.Time
}

func (r *recorder) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[req.NamespacedName] = append(r.seen[req.NamespacedName], time.Now())
	return ctrl.Result{}, nil
}

func (r *recorder) count(key types.NamespacedName) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[key])
}

// controllers numbers the consumer controllers: names are unique per process, and a benchmark
// runs its function more than once.
var controllers atomic.Int64

// startConsumerController runs a manager with a Consumer controller wired the way every gated
// controller is: the spec.gates.refs index and the Gate watch.
func startConsumerController(t testing.TB) *recorder {
	t.Helper()
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Client.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g.Expect(gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &testapi.Consumer{})).To(Succeed())

	rec := &recorder{seen: map[types.NamespacedName][]time.Time{}}
	b := ctrl.NewControllerManagedBy(mgr).For(&testapi.Consumer{}).Named(fmt.Sprintf("consumer-%d", controllers.Add(1)))
	err = gates.Watch(b, mgr.GetClient(), func() client.ObjectList { return &testapi.ConsumerList{} }).Complete(rec)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = mgr.Start(ctx) }()
	return rec
}

func createConsumer(t testing.TB, ns, name string, spec *gatesapi.Gates) types.NamespacedName {
	t.Helper()
	c := &testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: testapi.ConsumerSpec{Gates: spec}}
	NewWithT(t).Expect(env.Client.Create(context.Background(), c)).To(Succeed())
	return client.ObjectKeyFromObject(c)
}

func TestWatchReleasesConsumersWhenGateOpens(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	other := env.Namespace(t)
	rec := startConsumerController(t)

	gate := createGate(t, ns, "approval", closed())
	local := createConsumer(t, ns, "local", &gatesapi.Gates{Refs: []string{"approval"}})
	remote := createConsumer(t, other, "remote", &gatesapi.Gates{Refs: []string{ns + "/approval"}})
	unrelated := createConsumer(t, ns, "unrelated", &gatesapi.Gates{Refs: []string{"something-else"}})
	for _, k := range []types.NamespacedName{local, remote, unrelated} {
		g.Eventually(func() int { return rec.count(k) }, 10*time.Second).Should(Equal(1), k.String())
	}

	// A change that does not open or close the gate wakes nobody.
	gate.SetLabels(map[string]string{"team": "sre"})
	g.Expect(env.Client.Update(context.Background(), gate)).To(Succeed())
	g.Consistently(func() int { return rec.count(local) }, time.Second).Should(Equal(1))

	// Opening it reconciles both consumers at once, in either namespace, and no one else.
	setGateStatus(t, gate, opened())
	openedAt := time.Now()
	for _, k := range []types.NamespacedName{local, remote} {
		g.Eventually(func() int { return rec.count(k) }, time.Second, 10*time.Millisecond).Should(Equal(2), k.String())
	}
	t.Logf("consumers released %s after the gate opened", time.Since(openedAt))
	g.Expect(rec.count(unrelated)).To(Equal(1))
}

func TestWatchReleasesConsumersWhenMissingGateAppears(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	rec := startConsumerController(t)

	waiting := createConsumer(t, ns, "waiting", &gatesapi.Gates{Refs: []string{"late-gate"}})
	g.Eventually(func() int { return rec.count(waiting) }, 10*time.Second).Should(Equal(1))

	createGate(t, ns, "late-gate", opened())
	g.Eventually(func() int { return rec.count(waiting) }, 2*time.Second).Should(BeNumerically(">=", 2))
}
