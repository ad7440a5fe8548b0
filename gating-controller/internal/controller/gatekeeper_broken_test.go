package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// gateCondition returns a condition of the gate as "status|reason|message".
func gateCondition(ns, name, typ string) func(g Gomega) string {
	return func(g Gomega) string { return condition(getGate(g, ns, name), typ) }
}

// A weekend freeze with a typo (the issue's `* * * * SAT-SUN-X`) cannot be evaluated: its gate
// gets KeeperFailed and is held closed (fail safe) rather than left opened by its default; a
// manual request still overrides it; fixing the keeper removes the condition and the schedule
// decides again.
func TestBrokenFreezeClosesItsGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-12-02T10:00:00Z") // a Wednesday
	gate := createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateOpened, Window: duration("1h")})
	gk := createKeeper(t, ns, "weekend-freeze", gatingv1.GateKeeperSpec{
		Gate: "production", CronJob: &gatingv1.CronJob{Closed: []string{"* * * * SAT-SUN-X"}},
	})

	failed := "True|InvalidSchedule|GateKeeper 'weekend-freeze' cannot be evaluated, the gate is held closed until it is fixed: " +
		"spec.cronjob.closed[0]: invalid cron expression '* * * * SAT-SUN-X'"
	g.Eventually(gateCondition(ns, "production", KeeperFailedCondition), timeout).Should(HavePrefix(failed))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'weekend-freeze' cannot be evaluated"))
	g.Expect(gateCondition(ns, "production", meta.ReadyCondition)(g)).To(Equal("False|InvalidSchedule|" +
		"Gate closed as GateKeeper 'weekend-freeze' cannot be evaluated (a broken schedule holds its gate closed until it is fixed)"))
	history := getGate(g, ns, "production").Status.History
	g.Expect(history[0].Cause).To(Equal("gatekeeper/weekend-freeze"))
	g.Expect(history[0].Reason).To(HavePrefix("invalid schedule: spec.cronjob.closed[0]: invalid cron expression '* * * * SAT-SUN-X'"))
	g.Eventually(eventsOf(ns, "production"), timeout).Should(ContainElement(HavePrefix("Warning InvalidSchedule: GateKeeper 'weekend-freeze' cannot be evaluated")))
	g.Expect(keeperReady(ns, "weekend-freeze")(g)).To(HavePrefix("False|InvalidSchedule|invalid schedule, the gate is held closed until it is fixed: "))
	// Consumers see it closed.
	g.Expect(blocked(ns, &gatesapi.Gates{Refs: []string{"production"}})(g)).
		To(Equal("Reconciliation is blocked as gate '" + ns + "/production' is closed."))

	// An open request is the way out while the keeper is broken, for its window.
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2026-12-02T10:00:00Z", gatingv1.OpenRequestedByAnnotation, "alice")
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-12-02T11:00:00Z"))
	g.Expect(gateCondition(ns, "production", KeeperFailedCondition)(g)).To(HavePrefix(failed))
	g.Expect(gateCondition(ns, "production", meta.ReadyCondition)(g)).To(Equal("False|InvalidSchedule|" +
		"Gate opened by the open request of alice until 2026-12-02T11:00:00Z (for 1h0m0s); " +
		"a GateKeeper of the gate cannot be evaluated (see KeeperFailed)"))

	// Fixed: the condition goes and the schedule decides (a Wednesday: outside the freeze).
	setClock("2026-12-02T11:30:00Z")
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(gk), gk)).To(Succeed())
	gk.Spec.CronJob.Closed = []string{"* * * * SAT,SUN"}
	g.Expect(k8s.Update(context.Background(), gk)).To(Succeed())
	g.Eventually(gateCondition(ns, "production", KeeperFailedCondition), timeout).Should(BeEmpty())
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-12-05T00:00:00Z"))
	g.Expect(gateCondition(ns, "production", meta.ReadyCondition)(g)).To(Equal("True|Succeeded|" +
		"Gate opened by the schedule of GateKeeper 'weekend-freeze' until 2026-12-05T00:00:00Z"))
	g.Eventually(eventsOf(ns, "production"), timeout).Should(ContainElement(
		"Normal KeeperRecovered: every GateKeeper of the gate can be evaluated again"))
	g.Eventually(keeperReady(ns, "weekend-freeze"), timeout).
		Should(Equal("True|Succeeded|Gate 'production' is kept opened until 2026-12-05T00:00:00Z"))
}

// A keeper overridden by a manual request does not claim to keep the gate in its own state: the
// issue's keeper said "kept opened until 2026-12-25" of a gate closed by hand.
func TestKeeperOverriddenByRequestSaysSo(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-12-05T10:00:00Z")
	gate := createGate(t, ns, "prod", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "xmas", gatingv1.GateKeeperSpec{Gate: "prod", CronJob: &gatingv1.CronJob{Closed: []string{"* * 25 12 *"}}})
	g.Eventually(keeperReady(ns, "xmas"), timeout).
		Should(Equal("True|Succeeded|Gate 'prod' is kept opened until 2026-12-25T00:00:00Z"))

	// No duration and no spec.window: the request lasts until the next one, and both say so.
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2026-12-05T10:00:00Z", gatingv1.CloseRequestedByAnnotation, "alice")
	g.Eventually(openedCondition(ns, "prod"), timeout).Should(HavePrefix("False|"))
	g.Expect(gateCondition(ns, "prod", meta.ReadyCondition)(g)).To(Equal("True|Succeeded|" +
		"Gate closed by the close request of alice until the next request (no duration and no spec.window: it does not end by itself)"))
	g.Eventually(keeperReady(ns, "xmas"), timeout).Should(Equal("True|Succeeded|" +
		"Gate 'prod' would be kept opened, but the close request of alice overrides this GateKeeper until the next request"))

	// A later open request returns the gate to its schedule (the gate's default is opened).
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2026-12-05T10:00:00Z", gatingv1.OpenRequestedByAnnotation, "bob")
	g.Eventually(keeperReady(ns, "xmas"), timeout).
		Should(Equal("True|Succeeded|Gate 'prod' is kept opened until 2026-12-25T00:00:00Z"))
}
