package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
)

// Both reconcilers finish through shared/status.Finalize: these tests pin what that means for
// Gates and GateKeepers.

// unavailable is the transient error the failing clients return.
var unavailable = apierrors.NewServiceUnavailable("etcd is unavailable")

// listFails is a client whose List calls fail.
type listFails struct{ client.Client }

func (listFails) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return unavailable
}

// gateGetFails is a client whose reads of Gates fail.
type gateGetFails struct{ client.Client }

func (c gateGetFails) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*gatingv1.Gate); ok {
		return unavailable
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// condition returns an object's condition as "status|reason|message", "" when it has none.
func condition(obj conditions.Getter, typ string) string {
	c := conditions.Get(obj, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "|" + c.Reason + "|" + c.Message
}

// conditionGauge returns the status whose gotk_reconcile_condition series is 1 for the object
// and condition type, "" when there is no series.
func conditionGauge(g Gomega, reg *prometheus.Registry, kind, ns, name, typ string) string {
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "gotk_reconcile_condition" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["namespace"] == ns && labels["name"] == name &&
				labels["type"] == typ && m.GetGauge().GetValue() == 1 {
				return labels["status"]
			}
		}
	}
	return ""
}

// A transient error of a Gate's reconcile makes it Ready=False with the error and
// Reconciling=True, ProgressingWithRetry, in the status and in the gotk_reconcile_condition
// gauges; Opened and observedGeneration stay as they were. The next successful reconcile
// removes Reconciling.
func TestGateTransientErrorIsRetried(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-22T10:00:00Z")
	createGate(t, ns, "prod", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	g.Eventually(openedCondition(ns, "prod"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))
	g.Eventually(func(g Gomega) int64 { return getGate(g, ns, "prod").Status.ObservedGeneration }, timeout).Should(Equal(int64(1)))
	// The running controller is done with the gate: nothing changes it until the test does.
	g.Consistently(openedCondition(ns, "prod"), "300ms").Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))

	reg := prometheus.NewRegistry()
	readiness := conditiongauge.New(k8s.Scheme()).MustRegister(reg)
	failing := &GateReconciler{Client: listFails{gateReconciler.Client}, EventRecorder: record.NewFakeRecorder(10), Clock: clk, Metrics: readiness}
	_, err := failing.Reconcile(context.Background(), ctrlRequest(ns, "prod"))
	g.Expect(err).To(MatchError(ContainSubstring("etcd is unavailable")))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())

	msg := "listing the GateKeepers of the gate: etcd is unavailable"
	gate := getGate(g, ns, "prod")
	g.Expect(condition(gate, meta.ReadyCondition)).To(Equal("False|ReconciliationFailed|" + msg))
	g.Expect(condition(gate, meta.ReconcilingCondition)).To(Equal("True|ProgressingWithRetry|" + msg))
	g.Expect(condition(gate, meta.StalledCondition)).To(BeEmpty())
	g.Expect(openedCondition(ns, "prod")(g)).To(Equal("True|ReconciliationSucceeded|Gate opened by default"))
	g.Expect(gate.Status.ObservedGeneration).To(Equal(int64(1)))
	g.Expect(conditionGauge(g, reg, "Gate", ns, "prod", meta.ReadyCondition)).To(Equal("False"))
	g.Expect(conditionGauge(g, reg, "Gate", ns, "prod", meta.ReconcilingCondition)).To(Equal("True"))
	g.Expect(conditionGauge(g, reg, "Gate", ns, "prod", meta.StalledCondition)).To(Equal("Unknown"))

	recovered := &GateReconciler{Client: gateReconciler.Client, EventRecorder: record.NewFakeRecorder(10), Clock: clk, Metrics: readiness}
	_, err = recovered.Reconcile(context.Background(), ctrlRequest(ns, "prod"))
	g.Expect(err).NotTo(HaveOccurred())
	gate = getGate(g, ns, "prod")
	g.Expect(condition(gate, meta.ReadyCondition)).To(Equal("True|Succeeded|Gate opened by default"))
	g.Expect(condition(gate, meta.ReconcilingCondition)).To(BeEmpty())
	g.Expect(conditionGauge(g, reg, "Gate", ns, "prod", meta.ReadyCondition)).To(Equal("True"))
	g.Expect(conditionGauge(g, reg, "Gate", ns, "prod", meta.ReconcilingCondition)).To(Equal("Unknown"))
}

// A transient error of a GateKeeper's reconcile (its gate cannot be read) makes it Ready=False
// with the error and Reconciling=True, ProgressingWithRetry; the next successful reconcile
// removes Reconciling.
func TestGateKeeperTransientErrorIsRetried(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-22T10:00:00Z")
	createGate(t, ns, "change-freeze", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{Gate: "change-freeze", CronJob: &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *"}}})
	ready := "True|Succeeded|Gate 'change-freeze' is kept closed until 2026-12-01T00:00:00Z"
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal(ready))
	// The running controller is done with the keeper: nothing changes it until the test does.
	g.Consistently(keeperReady(ns, "freeze"), "300ms").Should(Equal(ready))

	failing := &GateKeeperReconciler{Client: gateGetFails{k8s}, EventRecorder: record.NewFakeRecorder(10), Clock: clk}
	_, err := failing.Reconcile(context.Background(), ctrlRequest(ns, "freeze"))
	g.Expect(err).To(MatchError("etcd is unavailable"))
	gk := getKeeper(g, ns, "freeze")
	g.Expect(condition(gk, meta.ReadyCondition)).To(Equal("False|ReconciliationFailed|etcd is unavailable"))
	g.Expect(condition(gk, meta.ReconcilingCondition)).To(Equal("True|ProgressingWithRetry|etcd is unavailable"))
	g.Expect(condition(gk, meta.StalledCondition)).To(BeEmpty())
	g.Expect(gk.Status.ObservedGeneration).To(Equal(int64(1)))

	recovered := &GateKeeperReconciler{Client: k8s, EventRecorder: record.NewFakeRecorder(10), Clock: clk}
	_, err = recovered.Reconcile(context.Background(), ctrlRequest(ns, "freeze"))
	g.Expect(err).NotTo(HaveOccurred())
	gk = getKeeper(g, ns, "freeze")
	g.Expect(condition(gk, meta.ReadyCondition)).To(Equal(ready))
	g.Expect(condition(gk, meta.ReconcilingCondition)).To(BeEmpty())
}

// An invalid schedule is a terminal error: Ready=False and Stalled=True carry the same reason,
// InvalidSchedule, and the same message, the generation is observed, and a Warning event says
// why. Fixing the spec removes Stalled.
func TestGateKeeperInvalidScheduleStalls(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-22T10:00:00Z")
	createGate(t, ns, "target", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	spec := gatingv1.GateKeeperSpec{Gate: "target", CronJob: &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *", "* * 40 11 *"}}}
	_, parseErr := keeper.Parse(spec)
	g.Expect(parseErr).To(HaveOccurred())
	msg := "invalid schedule, the gate is held closed until it is fixed: " + parseErr.Error()
	g.Expect(msg).To(HavePrefix("invalid schedule, the gate is held closed until it is fixed: " +
		"spec.cronjob.closed[1]: invalid cron expression '* * 40 11 *'"))
	gk := createKeeper(t, ns, "bad-cron", spec)

	g.Eventually(func(g Gomega) string { return condition(getKeeper(g, ns, "bad-cron"), meta.StalledCondition) }, timeout).
		Should(Equal("True|InvalidSchedule|" + msg))
	got := getKeeper(g, ns, "bad-cron")
	g.Expect(condition(got, meta.ReadyCondition)).To(Equal("False|InvalidSchedule|" + msg))
	g.Expect(condition(got, meta.ReconcilingCondition)).To(BeEmpty())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(got.Status.Active).To(BeEmpty())
	g.Expect(got.Status.NextTransitionAt).To(BeNil())
	g.Eventually(eventsOf(ns, "bad-cron"), timeout).Should(ContainElement("Warning InvalidSchedule: " + msg))

	// The reconciler returns the terminal error.
	_, err := (&GateKeeperReconciler{Client: k8s, EventRecorder: record.NewFakeRecorder(10), Clock: clk}).
		Reconcile(context.Background(), ctrlRequest(ns, "bad-cron"))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())

	// Fixed, the keeper is Ready again and no longer Stalled.
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(gk), gk)).To(Succeed())
	gk.Spec.CronJob.Closed = []string{"* * 20-30 11 *"}
	g.Expect(k8s.Update(context.Background(), gk)).To(Succeed())
	g.Eventually(keeperReady(ns, "bad-cron"), timeout).
		Should(Equal("True|Succeeded|Gate 'target' is kept closed until 2026-12-01T00:00:00Z"))
	got = getKeeper(g, ns, "bad-cron")
	g.Expect(condition(got, meta.StalledCondition)).To(BeEmpty())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(got.Generation).To(Equal(int64(2)))
}

// A GateKeeper's finish records its gotk_reconcile_condition gauges, as every other kind's.
func TestGateKeeperRecordsConditionGauges(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{Gate: "production", CronJob: &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *"}}})
	g.Eventually(func(g Gomega) int64 { return getKeeper(g, ns, "freeze").Status.ObservedGeneration }, timeout).Should(Equal(int64(1)))

	reg := prometheus.NewRegistry()
	keeperReconciler := &GateKeeperReconciler{Client: gateReconciler.Client, EventRecorder: record.NewFakeRecorder(10), Clock: clk,
		Metrics: conditiongauge.New(k8s.Scheme()).MustRegister(reg)}
	_, err := keeperReconciler.Reconcile(context.Background(), ctrlRequest(ns, "freeze"))
	g.Expect(err).NotTo(HaveOccurred())
	ready := conditions.Get(getKeeper(g, ns, "freeze"), meta.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(conditionGauge(g, reg, "GateKeeper", ns, "freeze", meta.ReadyCondition)).To(Equal(string(ready.Status)))
	g.Expect(conditionGauge(g, reg, "GateKeeper", ns, "freeze", meta.StalledCondition)).To(Equal("Unknown"))
}
