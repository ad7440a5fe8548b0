package gatestate

import (
	"fmt"
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// KeeperMessage says what the keeper does to its gate now, and for which calendar event or
// period (event; empty when none names it).
func KeeperMessage(gk *gatingv1.GateKeeper, event string) string {
	var msg string
	switch gk.Status.Active {
	case gatingv1.ActiveClosed, gatingv1.ActiveOpened:
		msg = fmt.Sprintf("Gate '%s' is kept %s", gk.Spec.Gate, gk.Status.Active)
		if event != "" {
			msg += fmt.Sprintf(" for '%s'", event)
		}
	default:
		msg = fmt.Sprintf("No schedule of gate '%s' is active", gk.Spec.Gate)
	}
	if t := gk.Status.NextTransitionAt; t != nil {
		msg += " until " + t.UTC().Format(time.RFC3339)
	}
	return msg
}

// Override is a manual request of the gate that beats a keeper's schedule now.
type Override struct {
	Request *gatingv1.GateRequest
	// End is when the request ends, nil when it does not end by itself.
	End *time.Time
}

// Overriding is the gate's request in force at now when it holds the gate in the other
// state than the keeper's active one; nil when there is none, or when the keeper is inactive or
// agrees with it.
func Overriding(gate *gatingv1.Gate, active gatingv1.GateKeeperActive, now time.Time) *Override {
	st := gate.Status
	if st.Request == nil || st.RequestedAt == nil || now.Before(st.RequestedAt.Time) ||
		active == gatingv1.ActiveNone || string(active) == string(st.Request.State) {
		return nil
	}
	o := &Override{Request: st.Request}
	if st.ResetToDefaultAt != nil {
		if !now.Before(st.ResetToDefaultAt.Time) {
			return nil // ended, or a request for the default state that ended at once
		}
		o.End = &st.ResetToDefaultAt.Time
	}
	return o
}

// Message is the keeper's Ready message while the request overrides it: "Gate 'prod' would be
// kept closed, but the open request of alice overrides it until T".
func (o *Override) Message(gk *gatingv1.GateKeeper) string {
	who := ""
	if o.Request.RequestedBy != "" {
		who = " of " + o.Request.RequestedBy
	}
	until := " until the next request"
	if o.End != nil {
		until = " until " + o.End.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("Gate '%s' would be kept %s, but the %s request%s overrides this GateKeeper%s",
		gk.Spec.Gate, gk.Status.Active, RequestVerb(o.Request.State), who, until)
}
