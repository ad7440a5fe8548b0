package leaderpod

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

const key = "source.toolkit.fluxcd.io/artifact-server"

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leaderpod-"}}
	NewWithT(t).Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// newPod creates a pod with labels: no node runs it, the API server keeps it Pending, which is
// all the labeler needs.
func newPod(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "source-controller"}}},
	}
	NewWithT(t).Expect(env.Client.Create(context.Background(), pod)).To(Succeed())
}

// labelOf polls the label of a pod: its value, or "<none>".
func labelOf(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		pod := &corev1.Pod{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
		if v, ok := pod.Labels[key]; ok {
			return v
		}
		return "<none>"
	}
}

var fastBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 5, Cap: time.Second}

// The runnables alone: the label of a former leader goes at start, the elected runnable sets it,
// and takes it away when it stops; the pod's other labels stay.
func TestLabelerRemovesAtStartLabelsWhenElectedAndUnlabelsAtStop(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newPod(t, ns, "source-controller-0", map[string]string{key: Value, "app.kubernetes.io/name": "source-controller"})
	l := &Labeler{Client: env.Client, Reader: env.Client, Namespace: ns, Name: "source-controller-0", Key: key, Backoff: fastBackoff}

	// Start: the stale label goes, the runnable ends.
	g.Expect(l.Unlabeler().Start(context.Background())).To(Succeed())
	g.Expect(labelOf(ns, "source-controller-0")(g)).To(Equal("<none>"))
	// Once more, with nothing to remove.
	g.Expect((&unlabeler{l}).Start(context.Background())).To(Succeed())

	// Elected: the label is set.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	g.Eventually(labelOf(ns, "source-controller-0"), 10*time.Second, 50*time.Millisecond).Should(Equal(Value))

	// Stop: the label goes before Start returns.
	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
	g.Expect(labelOf(ns, "source-controller-0")(g)).To(Equal("<none>"))
	pod := &corev1.Pod{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "source-controller-0"}, pod)).To(Succeed())
	g.Expect(pod.Labels).To(Equal(map[string]string{"app.kubernetes.io/name": "source-controller"}))
}

// The elected runnable waits for the removal at start, so that the removal cannot undo it.
func TestLabelerLabelsOnlyAfterTheRemovalAtStart(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newPod(t, ns, "pod", nil)
	l := &Labeler{Client: env.Client, Reader: env.Client, Namespace: ns, Name: "pod", Key: key, Backoff: fastBackoff}
	l.init()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	g.Consistently(labelOf(ns, "pod"), time.Second, 100*time.Millisecond).Should(Equal("<none>"))
	g.Expect(l.Unlabeler().Start(context.Background())).To(Succeed())
	g.Eventually(labelOf(ns, "pod"), 10*time.Second, 50*time.Millisecond).Should(Equal(Value))
	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
	g.Expect(labelOf(ns, "pod")(g)).To(Equal("<none>"))
}

// A pod that does not exist (POD_NAME or RUNTIME_NAMESPACE wrong) fails the start, which stops
// the manager with a message naming the pod and the variables.
func TestLabelerFailsAtStartForAMissingPod(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	l := &Labeler{Client: env.Client, Reader: env.Client, Namespace: ns, Name: "nowhere", Key: key, Backoff: fastBackoff}
	err := l.Unlabeler().Start(context.Background())
	g.Expect(err).To(MatchError(And(ContainSubstring(ns+"/nowhere"), ContainSubstring("POD_NAME"), ContainSubstring("not found"))))
}

// New reads the pod from the environment and checks the label key.
func TestNewNeedsThePodFromTheEnvironment(t *testing.T) {
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())

	t.Setenv(PodNameEnv, "")
	t.Setenv(PodNamespaceEnv, "")
	_, err = New(mgr, key)
	g.Expect(err).To(MatchError(And(ContainSubstring("POD_NAME (metadata.name) and RUNTIME_NAMESPACE (metadata.namespace)"), ContainSubstring("downward API"))))
	t.Setenv(PodNamespaceEnv, "sluice-system")
	_, err = New(mgr, key)
	g.Expect(err).To(MatchError(And(ContainSubstring("POD_NAME"), Not(ContainSubstring("RUNTIME_NAMESPACE")))))

	t.Setenv(PodNameEnv, "source-controller-abc")
	_, err = New(mgr, "not a key")
	g.Expect(err).To(MatchError(ContainSubstring(`"not a key" is not a label key`)))
	l, err := New(mgr, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Namespace).To(Equal("sluice-system"))
	g.Expect(l.Name).To(Equal("source-controller-abc"))
}

// replica is one manager with leader election and the labeler of its pod.
type replica struct {
	pod    string
	mgr    ctrl.Manager
	cancel context.CancelFunc
	// stopped is closed when the manager's Start returned err.
	stopped chan struct{}
	err     error
}

func startReplica(t *testing.T, ns, pod string) *replica {
	t.Helper()
	g := NewWithT(t)
	lease, renew, retry := 4*time.Second, 3*time.Second, 200*time.Millisecond
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              "source-controller",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv(PodNameEnv, pod)
	t.Setenv(PodNamespaceEnv, ns)
	l, err := New(mgr, key)
	g.Expect(err).NotTo(HaveOccurred())
	l.Backoff = fastBackoff
	g.Expect(l.SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{pod: pod, mgr: mgr, cancel: cancel, stopped: make(chan struct{})}
	go func() {
		r.err = mgr.Start(ctx)
		close(r.stopped)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.stopped
	})
	return r
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// Two replicas share one Lease (controller-runtime's leader election): the pod of the one
// elected is labelled, the other's stale label goes; when the leader stops, its label goes and
// the other replica, elected in turn, labels its own pod. One pod at a time is behind the Service.
func TestTwoReplicasLabelOnlyTheLeader(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newPod(t, ns, "a", nil)
	newPod(t, ns, "b", map[string]string{key: Value}) // a former leader, restarted
	a := startReplica(t, ns, "a")
	b := startReplica(t, ns, "b")

	labels := func(g Gomega) []string { return []string{labelOf(ns, "a")(g), labelOf(ns, "b")(g)} }
	// Eventually one replica is elected, its pod alone labelled; b's stale label is gone.
	var leader, standby *replica
	g.Eventually(func(g Gomega) {
		leader, standby = nil, nil
		switch {
		case a.elected() && !b.elected():
			leader, standby = a, b
		case b.elected() && !a.elected():
			leader, standby = b, a
		}
		g.Expect(leader).NotTo(BeNil(), "one replica elected")
		g.Expect(labelOf(ns, leader.pod)(g)).To(Equal(Value))
		g.Expect(labelOf(ns, standby.pod)(g)).To(Equal("<none>"))
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Consistently(labels, 2*time.Second, 200*time.Millisecond).Should(ContainElement("<none>"))

	leader.cancel()
	g.Eventually(leader.stopped, 20*time.Second).Should(BeClosed())
	g.Expect(leader.err).NotTo(HaveOccurred())
	g.Expect(labelOf(ns, leader.pod)(g)).To(Equal("<none>"), "the label goes before the lease is released")
	g.Eventually(labelOf(ns, standby.pod), 20*time.Second, 100*time.Millisecond).Should(Equal(Value))
	g.Expect(standby.elected()).To(BeTrue())
	g.Expect(labelOf(ns, leader.pod)(g)).To(Equal("<none>"))
}
