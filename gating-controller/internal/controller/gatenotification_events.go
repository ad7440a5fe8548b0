package controller

import (
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// Notifier takes the events of gates for the GateNotifications; Enqueue must not block.
type Notifier interface {
	Enqueue(ev notify.Event)
}

// gateEvent is the part of a notification every event of the gate shares.
func gateEvent(gate *gatingv1.Gate, kind gatingv1.GateEventType, now time.Time) notify.Event {
	ev := notify.Event{Gate: gate.Name, Namespace: gate.Namespace, Event: string(kind), Time: now.UTC(), Labels: gate.Labels}
	for _, ref := range gate.Spec.NotificationRefs {
		ev.NotificationRefs = append(ev.NotificationRefs, ref.Name)
	}
	return ev
}

// notifyTransition hands the gate's change of state to the notifier: previous is the state
// recorded before (no notification for the first state of a new gate), message the sentence of
// the gate's own event.
func (r *GateReconciler) notifyTransition(gate *gatingv1.Gate, d gatestate.Decision, previous *gatingv1.GateTransition, now time.Time, message string) {
	if r.Notifier == nil || previous == nil {
		return
	}
	kind := gatingv1.GateEventClosed
	if d.Opened() {
		kind = gatingv1.GateEventOpened
	}
	ev := gateEvent(gate, kind, now)
	ev.State, ev.PreviousState = string(d.State), stateName(previous.Opened)
	ev.Reason, ev.Message, ev.Cause, ev.RequestedBy = d.Reason, message, d.Cause, d.RequestedBy
	if k, ok := strings.CutPrefix(d.Cause, "gatekeeper/"); ok {
		ev.GateKeeper = k
	}
	if d.Next != nil {
		until := d.Next.UTC()
		ev.Until = &until
	}
	r.Notifier.Enqueue(ev)
}

// notifyKeeperFailed hands a new failure of the gate's keepers to the notifier: the first broken
// keeper is named, the message lists them all.
func (r *GateReconciler) notifyKeeperFailed(gate *gatingv1.Gate, keepers []gatestate.Keeper, message string) {
	if r.Notifier == nil {
		return
	}
	ev := gateEvent(gate, gatingv1.GateEventKeeperFailed, r.Clock.Now())
	ev.State = stateName(conditions.IsTrue(gate, gatesapi.OpenedCondition))
	ev.Message = message
	for _, k := range keepers {
		if k.Err != nil {
			ev.GateKeeper, ev.Cause, ev.Reason = k.Name, "gatekeeper/"+k.Name, k.Err.Error()
			break
		}
	}
	r.Notifier.Enqueue(ev)
}

func stateName(opened bool) string {
	if opened {
		return string(gatingv1.GateOpened)
	}
	return string(gatingv1.GateClosed)
}
