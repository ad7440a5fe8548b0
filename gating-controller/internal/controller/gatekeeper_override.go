package controller

import (
	"fmt"
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
)

// override is a manual request of the gate that beats a keeper's schedule now.
type override struct {
	request *gatingv1.GateRequest
	end     *time.Time
}

// requestOverriding is the gate's request in force at now when it holds the gate in the other
// state than the keeper's active one; nil when there is none, or when the keeper is inactive or
// agrees with it.
func requestOverriding(gate *gatingv1.Gate, active gatingv1.GateKeeperActive, now time.Time) *override {
	st := gate.Status
	if st.Request == nil || st.RequestedAt == nil || now.Before(st.RequestedAt.Time) ||
		active == gatingv1.ActiveNone || string(active) == string(st.Request.State) {
		return nil
	}
	o := &override{request: st.Request}
	if st.ResetToDefaultAt != nil {
		if !now.Before(st.ResetToDefaultAt.Time) {
			return nil // ended, or a request for the default state that ended at once
		}
		o.end = &st.ResetToDefaultAt.Time
	}
	return o
}

// message is the keeper's Ready message while the request overrides it: "Gate 'prod' would be
// kept closed, but the open request of alice overrides it until T".
func (o *override) message(gk *gatingv1.GateKeeper) string {
	who := ""
	if o.request.RequestedBy != "" {
		who = " of " + o.request.RequestedBy
	}
	until := " until the next request"
	if o.end != nil {
		until = " until " + o.end.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("Gate '%s' would be kept %s, but the %s request%s overrides this GateKeeper%s",
		gk.Spec.Gate, gk.Status.Active, gatestate.RequestVerb(o.request.State), who, until)
}
