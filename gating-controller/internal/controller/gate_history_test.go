package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
)

// A status whose Opened condition got ahead of its history (written in two requests and
// interrupted in between) gets the transition recorded when the request is handled again: the
// history decides what is new, not the condition.
func TestRecordAfterAnInterruptedStatusWrite(t *testing.T) {
	g := NewWithT(t)
	events := record.NewFakeRecorder(10)
	r := &GateReconciler{EventRecorder: events}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	gate := &gatingv1.Gate{}
	gate.Namespace, gate.Name = "flux-system", "change-freeze"
	gate.Status.History = []gatingv1.GateTransition{{Time: metav1.NewTime(now.Add(-time.Hour)), Opened: true, Cause: "default"}}
	conditions.MarkFalse(gate, gatesapi.OpenedCondition, ReconciliationSucceededReason, "Gate close requested")

	closeRequest := gatestate.Decision{State: gatingv1.GateClosed, Cause: "request", Reason: "freeze", RequestedBy: "alice", Message: "Gate close requested"}
	r.record(context.Background(), gate, closeRequest, now)
	g.Expect(gate.Status.History).To(HaveLen(2))
	g.Expect(gate.Status.History[0]).To(Equal(gatingv1.GateTransition{
		Time: metav1.NewTime(now), Opened: false, Cause: "request", Reason: "freeze", RequestedBy: "alice"}))
	g.Expect(events.Events).To(HaveLen(1))

	// Recording the same state again adds nothing.
	r.record(context.Background(), gate, closeRequest, now.Add(time.Minute))
	g.Expect(gate.Status.History).To(HaveLen(2))
	g.Expect(events.Events).To(HaveLen(1))
}
