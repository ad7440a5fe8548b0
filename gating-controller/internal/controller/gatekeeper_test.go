package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func createKeeper(t *testing.T, ns, name string, spec gatingv1.GateKeeperSpec) *gatingv1.GateKeeper {
	t.Helper()
	gk := &gatingv1.GateKeeper{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), gk)).To(Succeed())
	return gk
}

func getKeeper(g Gomega, ns, name string) *gatingv1.GateKeeper {
	gk := &gatingv1.GateKeeper{}
	g.Expect(k8s.Get(context.Background(), ctrlRequest(ns, name).NamespacedName, gk)).To(Succeed())
	return gk
}

// keeperReady returns the keeper's Ready condition as "status|reason|message".
func keeperReady(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		c := conditions.Get(getKeeper(g, ns, name), "Ready")
		if c == nil {
			return ""
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
}

// blocked evaluates a consumer's gates the way every gated controller does.
func blocked(ns string, spec *gatesapi.Gates) func(g Gomega) string {
	return func(g Gomega) string {
		res, err := gates.Evaluate(context.Background(), k8s, ns, spec)
		g.Expect(err).NotTo(HaveOccurred())
		return res.Message()
	}
}

// The change freeze of docs/gatekeeper.md and deploy/examples/gates.yaml: change-freeze is
// closed by a GateKeeper during Black Friday and Christmas; bypass-signoff is a static closed
// gate opened by hand to let a release through; a GitRepository needs oneOf them.
func TestChangeFreezeAndBypassSignoff(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	closed := true
	setClock("2026-11-22T10:00:00Z")
	createGate(t, ns, "change-freeze", gatingv1.GateSpec{Closed: &closed})
	bypass := createGate(t, ns, "bypass-signoff", gatingv1.GateSpec{Closed: &closed})
	createKeeper(t, ns, "change-freeze-gatekeeper", gatingv1.GateKeeperSpec{
		Gate: "change-freeze",
		Type: gatingv1.CronExpression,
		CronJob: &gatingv1.CronJob{Closed: []string{
			"* * 20-30 11 *", // Black Friday: 20th-30th November
			"* * 15-31 12 *", // Xmas: 15th-31st December
		}},
	})
	gitRepositoryGates := &gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"change-freeze", "bypass-signoff"}}

	g.Eventually(openedCondition(ns, "change-freeze"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2026-12-01T00:00:00Z"))
	g.Eventually(openedCondition(ns, "bypass-signoff"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))
	g.Eventually(keeperReady(ns, "change-freeze-gatekeeper"), timeout).
		Should(Equal("True|Succeeded|Gate 'change-freeze' is kept closed until 2026-12-01T00:00:00Z"))
	g.Eventually(func(g Gomega) gatingv1.GateKeeperActive {
		return getKeeper(g, ns, "change-freeze-gatekeeper").Status.Active
	}, timeout).
		Should(Equal(gatingv1.ActiveClosed))
	g.Expect(blocked(ns, gitRepositoryGates)(g)).To(Equal("Reconciliation is blocked as none of its gates is opened: gate '" +
		ns + "/change-freeze' is closed until 2026-12-01T00:00:00Z and gate '" + ns + "/bypass-signoff' is closed."))

	// flux gate open bypass-signoff "Patching a CVE: Signed off by Bob the builder"
	annotate(t, bypass, gatesapi.OpenRequestAnnotation, "2026-11-22T10:00:00Z",
		gatingv1.OpenReasonAnnotation, "Patching a CVE: Signed off by Bob the builder",
		gatingv1.OpenRequestedByAnnotation, "bob")
	g.Eventually(blocked(ns, gitRepositoryGates), timeout).Should(BeEmpty())
	g.Eventually(openedCondition(ns, "bypass-signoff"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate open requested"))
	g.Eventually(eventsOf(ns, "bypass-signoff"), timeout).Should(ContainElement(
		"Normal GateOpened: Gate open requested (request, requested by bob: Patching a CVE: Signed off by Bob the builder)"))
	// The log line of a transition, as docs/gate.md shows it.
	g.Expect(logs.Lines()).To(ContainElement(And(
		ContainSubstring(`"msg":"opening gate: 'Patching a CVE: Signed off by Bob the builder'"`),
		ContainSubstring(`"closed":"false"`),
		ContainSubstring(`"Gate":{"name":"bypass-signoff","namespace":"`+ns+`"}`),
	)))

	// flux gate close bypass-signoff
	setClock("2026-11-22T10:30:00Z")
	annotate(t, bypass, gatesapi.CloseRequestAnnotation, "2026-11-22T10:30:00Z")
	g.Eventually(blocked(ns, gitRepositoryGates), timeout).ShouldNot(BeEmpty())
	g.Eventually(openedCondition(ns, "bypass-signoff"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate close requested"))

	// Outside the freezes change-freeze is opened: the keeper manages it.
	setClock("2026-12-05T12:00:00Z")
	poke(t, getGate(g, ns, "change-freeze"))
	g.Eventually(openedCondition(ns, "change-freeze"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-12-15T00:00:00Z"))
	g.Eventually(blocked(ns, gitRepositoryGates), timeout).Should(BeEmpty())
	g.Expect(getGate(g, ns, "change-freeze").Status.History[0].Cause).To(Equal("gatekeeper/change-freeze-gatekeeper"))
}

// A source behind a closed change-freeze gate is blocked with the message docs/gate.md shows.
func TestChangeFreezeBlocksSources(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2022-05-26T01:12:22Z")
	freeze := createGate(t, ns, "change-freeze", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	source := &gatesapi.Gates{Refs: []string{"change-freeze"}}
	g.Eventually(openedCondition(ns, "change-freeze"), timeout).Should(HavePrefix("True|"))
	g.Expect(blocked(ns, source)(g)).To(BeEmpty())

	annotate(t, freeze, gatesapi.CloseRequestAnnotation, "2022-05-26T01:12:22Z")
	g.Eventually(blocked(ns, source), timeout).
		Should(Equal("Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed."))
}

// A Europe/London weekend freeze across the October DST change opens and closes at local times.
func TestGateKeeperWindowAcrossDST(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-10-23T16:59:00Z") // Friday 17:59 BST
	gate := createGate(t, ns, "weekend", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "weekend-freeze", gatingv1.GateKeeperSpec{
		Gate: "weekend", TimeZone: "Europe/London",
		Windows: []gatingv1.Window{{Schedule: "0 18 * * FRI", Duration: *duration("63h"), State: gatingv1.GateClosed}},
	})
	g.Eventually(openedCondition(ns, "weekend"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-10-23T17:00:00Z"))

	setClock("2026-10-23T17:00:00Z") // Friday 18:00 BST
	poke(t, gate)
	// Monday 09:00 local is 09:00Z: the clocks went back on Sunday.
	g.Eventually(openedCondition(ns, "weekend"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2026-10-26T09:00:00Z"))

	setClock("2026-10-26T09:00:00Z")
	poke(t, gate)
	g.Eventually(openedCondition(ns, "weekend"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-10-30T18:00:00Z"))
}

// A manual open request overrides a keeper's freeze for its window, then the freeze resumes.
func TestGateRequestOverridesKeeper(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-22T10:00:00Z")
	gate := createGate(t, ns, "prod", gatingv1.GateSpec{Default: gatingv1.GateOpened, Window: duration("1h")})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{Gate: "prod", CronJob: &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *"}}})
	g.Eventually(openedCondition(ns, "prod"), timeout).Should(HavePrefix("False|"))

	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2026-11-22T10:00:00Z")
	g.Eventually(openedCondition(ns, "prod"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-11-22T11:00:00Z"))

	setClock("2026-11-22T11:00:00Z")
	poke(t, gate)
	g.Eventually(openedCondition(ns, "prod"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2026-12-01T00:00:00Z"))
}

// Bad schedules stall the keeper with the parse error; as both keepers list closed schedules,
// they hold their gate closed until fixed (fail safe), and the gate names both.
func TestGateKeeperBadInput(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-22T10:00:00Z")
	createGate(t, ns, "target", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "bad-cron", gatingv1.GateKeeperSpec{
		Gate: "target", CronJob: &gatingv1.CronJob{Closed: []string{"* * 40 11 *"}},
	})
	createKeeper(t, ns, "bad-tz", gatingv1.GateKeeperSpec{
		Gate: "target", TimeZone: "Mars/Olympus", CronJob: &gatingv1.CronJob{Closed: []string{"* * * * *"}},
	})
	for _, name := range []string{"bad-cron", "bad-tz"} {
		g.Eventually(func(g Gomega) bool { return conditions.IsStalled(getKeeper(g, ns, name)) }, timeout).Should(BeTrue(), name)
	}
	g.Expect(keeperReady(ns, "bad-cron")(g)).To(ContainSubstring("spec.cronjob.closed[0]: invalid cron expression '* * 40 11 *'"))
	g.Expect(keeperReady(ns, "bad-tz")(g)).To(ContainSubstring("spec.timeZone: unknown time zone 'Mars/Olympus'"))
	// Events are recorded asynchronously: the stall may be seen before its event.
	g.Eventually(eventsOf(ns, "bad-cron"), timeout).Should(ContainElement(ContainSubstring("Warning InvalidSchedule: invalid schedule")))
	g.Eventually(func(g Gomega) string { return condition(getGate(g, ns, "target"), KeeperFailedCondition) }, timeout).Should(And(
		HavePrefix("True|InvalidSchedule|GateKeeper 'bad-cron' cannot be evaluated, the gate is held closed until it is fixed: "+
			"spec.cronjob.closed[0]: invalid cron expression '* * 40 11 *'"),
		ContainSubstring("; GateKeeper 'bad-tz' cannot be evaluated, the gate is held closed until it is fixed: "+
			"spec.timeZone: unknown time zone 'Mars/Olympus'"),
	))
	g.Eventually(openedCondition(ns, "target"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'bad-cron' cannot be evaluated"))
}

// A keeper for a gate that does not exist says so, and recovers when the gate appears.
func TestGateKeeperForMissingGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-22T10:00:00Z")
	createKeeper(t, ns, "early", gatingv1.GateKeeperSpec{Gate: "later", CronJob: &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *"}}})
	g.Eventually(keeperReady(ns, "early"), timeout).
		Should(Equal("False|GateNotFound|gate 'later' not found in namespace '" + ns + "'; the schedule applies once it exists"))

	createGate(t, ns, "later", gatingv1.GateSpec{})
	g.Eventually(keeperReady(ns, "early"), timeout).Should(HavePrefix("True|Succeeded|"))
	g.Eventually(openedCondition(ns, "later"), timeout).Should(HavePrefix("False|"))
}
