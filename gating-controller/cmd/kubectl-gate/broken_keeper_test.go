package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	gatingcontroller "github.com/sluice-gitops/sluice/gating-controller/internal/controller"
)

// startGatingController runs the real Gate and GateKeeper reconcilers, watching namespace only
// so that they leave the status the other tests write alone. Only one test may call it: the
// reconcilers' names are registered once per process.
func startGatingController(t *testing.T, namespace string) {
	t.Helper()
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Client.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", gatingcontroller.ControllerName)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts := controller.Options{MaxConcurrentReconciles: 1}
	gates := &gatingcontroller.GateReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clock.RealClock{}}
	g.Expect(gates.SetupWithManager(ctx, mgr, opts)).To(Succeed())
	keepers := &gatingcontroller.GateKeeperReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clock.RealClock{}}
	g.Expect(keepers.SetupWithManager(ctx, mgr, opts)).To(Succeed())
	go func() { _ = mgr.Start(ctx) }()
}

// kubectl runs the kubectl of bin/ with the test kubeconfig.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(env.Root, "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), string(out))
	return string(out)
}

// The typo in a freeze schedule, end to end with the real gating-controller: the gate is
// held closed, `kubectl gate status` says why and warns, `kubectl get gatekeepers` shows the
// keeper not ready with the error; fixed, the warning goes and the gate opens.
func TestStatusShowsABrokenFreeze(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	startGatingController(t, ns)
	createGate(t, ns, "production", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened})
	gk := &gatingv1alpha1.GateKeeper{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weekend-freeze"},
		Spec: gatingv1alpha1.GateKeeperSpec{Gate: "production",
			CronJob: &gatingv1alpha1.CronJob{Closed: []string{"* * * * SAT-SUN-X"}}},
	}
	g.Expect(env.Client.Create(context.Background(), gk)).To(Succeed())

	failed := "GateKeeper 'weekend-freeze' cannot be evaluated, the gate is held closed until it is fixed: " +
		"spec.cronjob.closed[0]: invalid cron expression '* * * * SAT-SUN-X'"
	g.Eventually(func() string { return kubectlGate(t, "status", "production", "-n", ns).stdout }, 10*time.Second, 200*time.Millisecond).
		Should(ContainSubstring("Warning:              " + failed))
	res := kubectlGate(t, "status", "production", "-n", ns)
	g.Expect(res.stdout).To(ContainSubstring("State:                closed (Opened=False)\n"))
	g.Expect(res.stdout).To(ContainSubstring("Cause:                Gate closed as GateKeeper 'weekend-freeze' cannot be evaluated " +
		"(a broken schedule holds its gate closed until it is fixed)\n"))

	// The list stays a plain table on stdout; the warning goes to stderr.
	res = kubectlGate(t, "status", "-n", ns)
	g.Expect(rows(res.stdout, 6)[1][:2]).To(Equal([]string{"production", "False"}))
	g.Expect(res.stderr).To(HavePrefix("Warning: gate " + ns + "/production: " + failed))

	table := kubectl(t, "get", "gatekeepers", "-n", ns)
	lines := strings.Split(table, "\n")
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "GATE", "ACTIVE", "NEXT", "READY", "STATUS", "AGE"}))
	g.Expect(lines[1]).To(MatchRegexp(`^weekend-freeze\s+production\s+False\s+invalid schedule, the gate is held closed until it is fixed: spec.cronjob.closed\[0\]`))

	// Fixed: New Year's Day only.
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(gk), gk)).To(Succeed())
	gk.Spec.CronJob.Closed = []string{"0 0 1 1 *"}
	g.Expect(env.Client.Update(context.Background(), gk)).To(Succeed())
	g.Eventually(func() string { return kubectlGate(t, "status", "production", "-n", ns).stdout }, 10*time.Second, 200*time.Millisecond).
		Should(And(
			ContainSubstring("State:                opened (Opened=True)\n"),
			ContainSubstring("Cause:                Gate opened by the schedule of GateKeeper 'weekend-freeze' until "),
			Not(ContainSubstring("Warning:")),
		))
	g.Expect(kubectlGate(t, "status", "-n", ns).stderr).To(BeEmpty())
}
