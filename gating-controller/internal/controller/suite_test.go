package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

var (
	env *testenv.Env
	k8s client.Client
	// clk is the controllable clock of the reconcilers under test.
	clk = clocktesting.NewFakePassiveClock(time.Date(2021, 3, 26, 9, 0, 0, 0, time.UTC))
	// gateReconciler is the running reconciler, also called directly to read its requeue.
	gateReconciler *GateReconciler
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = gatingv1.AddToScheme(scheme)
	var err error
	if env, err = testenv.Start(testenv.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(false)))
	ctx, cancel := context.WithCancel(context.Background())
	if err := startManager(ctx, scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

func startManager(ctx context.Context, scheme *runtime.Scheme) error {
	// Secrets and ConfigMaps uncached, as bootstrap's manager reads them.
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: bootstrap.ClientOptions()})
	if err != nil {
		return err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", ControllerName)
	if err != nil {
		return err
	}
	opts := controller.Options{MaxConcurrentReconciles: 2}
	artifacts := keeper.NewCalendarFetcher()
	gateReconciler = &GateReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clk, Artifacts: artifacts,
		Clients: &impersonation.Clients{Config: env.Config, Scheme: scheme, Mapper: mgr.GetRESTMapper()}}
	if err := gateReconciler.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	keeperReconciler := &GateKeeperReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clk, Artifacts: artifacts}
	if err := keeperReconciler.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	if err := startNotifications(ctx, mgr, recorder, opts); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// logs holds what the reconcilers logged, as JSON lines.
var logs = &testenv.LogBuffer{}

// setClock moves the controllable clock.
func setClock(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	clk.SetTime(t)
	return t
}

// annotate merges annotations into an object, as `kubectl annotate --overwrite` does; an empty
// value removes the annotation.
func annotate(t *testing.T, obj client.Object, kv ...string) {
	t.Helper()
	testenv.Annotate(t, k8s, obj, kv...)
}

// poke asks for a reconcile now (reconcile.fluxcd.io/requestedAt), as `flux reconcile` does.
func poke(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Poke(t, k8s, obj)
}

// getGate reads a gate fresh from the API server.
func getGate(g Gomega, ns, name string) *gatingv1.Gate {
	gate := &gatingv1.Gate{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gate)).To(Succeed())
	return gate
}

// openedCondition returns the gate's Opened condition as "status|reason|message", once the
// status has caught up with the gate's annotations and the condition with the history.
func openedCondition(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		gate := getGate(g, ns, name)
		ann, st := gate.GetAnnotations(), gate.Status
		if ann[gatesapi.OpenRequestAnnotation] != st.LastHandledOpenAt && ann[gatesapi.OpenRequestAnnotation] != "" ||
			ann[gatesapi.CloseRequestAnnotation] != st.LastHandledCloseAt && ann[gatesapi.CloseRequestAnnotation] != "" ||
			ann[meta.ReconcileRequestAnnotation] != st.LastHandledReconcileAt {
			return "status not caught up"
		}
		c := conditions.Get(gate, gatesapi.OpenedCondition)
		if c == nil || len(st.History) == 0 || st.History[0].Opened != (c.Status == metav1.ConditionTrue) {
			return "status not caught up"
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
}

// eventsOf lists the events recorded for an object as "type reason: message".
func eventsOf(ns, name string) func(g Gomega) []string {
	return testenv.EventsOf(k8s, client.ObjectKey{Namespace: ns, Name: name}, "")
}

func createGate(t *testing.T, ns, name string, spec gatingv1.GateSpec) *gatingv1.Gate {
	t.Helper()
	gate := &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), gate)).To(Succeed())
	return gate
}

func duration(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}

const timeout = 10 * time.Second

func ctrlRequest(ns, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}
}
