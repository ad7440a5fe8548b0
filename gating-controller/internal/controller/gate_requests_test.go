package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// The example of docs/gate.md: a gate closed by default that an SRE opens for a window of 1h,
// then closes ahead of its schedule.
func TestGateApprovalWindow(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T09:59:00Z")
	gate := createGate(t, ns, "sre-approval", gatingv1.GateSpec{
		Interval: duration("30s"), Default: gatingv1.GateClosed, Window: duration("1h"),
	})
	g.Eventually(openedCondition(ns, "sre-approval"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	setClock("2021-03-26T10:00:00Z")
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:00Z")
	g.Eventually(openedCondition(ns, "sre-approval"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2021-03-26T11:00:00Z"))
	st := getGate(g, ns, "sre-approval").Status
	g.Expect(st.RequestedAt.UTC().Format("15:04:05")).To(Equal("10:00:00"))
	g.Expect(st.ResetToDefaultAt.UTC().Format("15:04:05")).To(Equal("11:00:00"))
	g.Expect(st.NextTransitionAt.UTC().Format("15:04:05")).To(Equal("11:00:00"))

	setClock("2021-03-26T10:10:00Z")
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T10:10:00Z")
	g.Eventually(openedCondition(ns, "sre-approval"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate close requested"))
	st = getGate(g, ns, "sre-approval").Status
	g.Expect(st.RequestedAt.UTC().Format("15:04:05")).To(Equal("10:10:00"))
	g.Expect(st.ResetToDefaultAt.UTC().Format("15:04:05")).To(Equal("10:10:00"))
	g.Expect(st.NextTransitionAt).To(BeNil())
	g.Expect(st.History).To(HaveLen(3))
	g.Expect(st.History[0].Cause).To(Equal("request"))
	g.Expect(st.History[0].Opened).To(BeFalse())
	g.Expect(st.History[1].Opened).To(BeTrue())
	g.Expect(st.History[2].Cause).To(Equal("default"))
}

// A maintenance gate opened by default, closed for 24h.
func TestGateMaintenanceWindow(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T09:00:00Z")
	gate := createGate(t, ns, "maintenance", gatingv1.GateSpec{
		Interval: duration("30s"), Default: gatingv1.GateOpened, Window: duration("24h"),
	})
	g.Eventually(openedCondition(ns, "maintenance"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))

	setClock("2021-03-26T10:00:00Z")
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T10:00:00Z")
	// The gate opens when the window ends, 24h after the request: resetToDefaultAt and the
	// message agree.
	g.Eventually(openedCondition(ns, "maintenance"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2021-03-27T10:00:00Z"))
	st := getGate(g, ns, "maintenance").Status
	g.Expect(st.ResetToDefaultAt.UTC().Format("2006-01-02T15:04:05")).To(Equal("2021-03-27T10:00:00"))

	// The window ends: the gate is back to its default.
	setClock("2021-03-27T10:00:01Z")
	poke(t, gate)
	g.Eventually(openedCondition(ns, "maintenance"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))
}

// A request is handled once: applying the same annotation again (say from Git) does nothing new.
func TestGateRequestIsHandledOnce(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "approval", gatingv1.GateSpec{Default: gatingv1.GateClosed, Window: duration("1h")})
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:00Z")
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(HavePrefix("True|"))

	setClock("2021-03-26T10:05:00Z")
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T10:05:00Z")
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(HavePrefix("False|"))

	// Re-applying the manifest: the open annotation goes away and comes back with the same value.
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "")
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:00Z")
	poke(t, gate)
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate close requested"))
	g.Consistently(openedCondition(ns, "approval"), "2s").Should(Equal("False|ReconciliationSucceeded|Gate close requested"))
	g.Expect(getGate(g, ns, "approval").Status.LastHandledOpenAt).To(Equal("2021-03-26T10:00:00Z"))
}

// Requests that cannot be honoured are ignored with a Warning event that says why.
func TestGateIgnoresBadRequests(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "approval", gatingv1.GateSpec{Default: gatingv1.GateClosed})
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(HavePrefix("False|"))

	annotate(t, gate, gatesapi.OpenRequestAnnotation, "yesterday")
	g.Eventually(eventsOf(ns, "approval"), timeout).Should(ContainElement(
		"Warning InvalidRequest: open request ignored: open.gate.fluxcd.io/requestedAt 'yesterday' is not an RFC 3339 time such as 2026-11-22T10:00:00Z"))

	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T12:00:00Z")
	g.Eventually(eventsOf(ns, "approval"), timeout).Should(ContainElement(
		"Warning InvalidRequest: open request ignored: open.gate.fluxcd.io/requestedAt '2021-03-26T12:00:00Z' is in the future (now is 2021-03-26T10:00:00Z)"))

	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:00Z", gatingv1.OpenDurationAnnotation, "forever")
	g.Eventually(eventsOf(ns, "approval"), timeout).Should(ContainElement(
		"Warning InvalidRequest: open request ignored: open.gate.fluxcd.io/duration 'forever' is not a positive duration such as 2h"))
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))
	g.Consistently(openedCondition(ns, "approval"), "1s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	// Within a minute of clock skew a request counts as now.
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:30Z", gatingv1.OpenDurationAnnotation, "")
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate open requested"))
}

// The later of the open and close requests wins, whatever order they are handled in; the
// request's own duration overrides spec.window; the event names who asked and why.
func TestGateLaterRequestWinsAndDurationOverridesWindow(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "approval", gatingv1.GateSpec{Default: gatingv1.GateClosed, Window: duration("1h")})
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(HavePrefix("False|"))

	annotate(t, gate,
		gatesapi.CloseRequestAnnotation, "2021-03-26T09:50:00Z",
		gatesapi.OpenRequestAnnotation, "2021-03-26T09:55:00Z",
		gatingv1.OpenDurationAnnotation, "2h",
		gatingv1.OpenReasonAnnotation, "Patching a CVE",
		gatingv1.OpenRequestedByAnnotation, "alice")
	g.Eventually(openedCondition(ns, "approval"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2021-03-26T11:55:00Z"))
	g.Eventually(eventsOf(ns, "approval"), timeout).Should(ContainElement(
		"Normal GateOpened: Gate scheduled for closing at 2021-03-26T11:55:00Z (request, requested by alice: Patching a CVE)"))
	st := getGate(g, ns, "approval").Status
	g.Expect(st.Request).To(Equal(&gatingv1.GateRequest{State: gatingv1.GateOpened, Reason: "Patching a CVE", RequestedBy: "alice"}))
	g.Expect(st.History[0]).To(And(HaveField("Cause", "request"), HaveField("RequestedBy", "alice"), HaveField("Reason", "Patching a CVE")))

	// A close request older than the request in force changes nothing.
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T09:52:00Z")
	g.Eventually(eventsOf(ns, "approval"), timeout).Should(ContainElement(
		"Warning InvalidRequest: close request of 2021-03-26T09:52:00Z ignored: the request of 2021-03-26T09:55:00Z is later"))
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(HavePrefix("True|"))
}

// The gate wakes up exactly when its window ends, not at its interval.
func TestGateRequeuesAtItsNextTransition(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	now := setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "approval", gatingv1.GateSpec{Default: gatingv1.GateClosed, Window: duration("50m")})
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T09:45:00Z")
	g.Eventually(openedCondition(ns, "approval"), timeout).Should(HavePrefix("True|"))

	res, err := gateReconciler.Reconcile(context.Background(), ctrlRequest(ns, "approval"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically("~", getGate(g, ns, "approval").Status.ResetToDefaultAt.Sub(now), 200_000_000))
	g.Expect(res.RequeueAfter.Minutes()).To(BeNumerically("~", 35, 0.1))

	// Without a transition in sight, the gate is re-evaluated at its interval.
	setClock("2021-03-26T10:40:00Z")
	res, err = gateReconciler.Reconcile(context.Background(), ctrlRequest(ns, "approval"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(defaultGateInterval))
}

func TestGateSpecValidation(t *testing.T) {
	ns := env.Namespace(t)
	closed := true
	for name, spec := range map[string]gatingv1.GateSpec{
		"both default and closed": {Default: gatingv1.GateOpened, Closed: &closed},
		"window of zero":          {Window: duration("0s")},
		"unknown default":         {Default: "ajar"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			gate := &gatingv1.Gate{Spec: spec}
			gate.Namespace, gate.Name = ns, "invalid"
			err := k8s.Create(context.Background(), gate)
			g.Expect(err).To(HaveOccurred())
			g.Expect(client.IgnoreNotFound(err)).To(MatchError(ContainSubstring("Invalid")))
		})
	}
}
