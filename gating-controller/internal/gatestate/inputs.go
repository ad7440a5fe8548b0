package gatestate

import (
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Inputs is everything a gate's state depends on, in the order of docs/gate.md ("The state
// of a gate"): the request in force, else its GateKeepers (closed beats opened), else its
// default. The gating-controller decides with it, and `kubectl gate ui` draws its timeline.
type Inputs struct {
	Default     gatingv1.GateState
	Request     *gatingv1.GateRequest
	RequestedAt *time.Time
	ResetAt     *time.Time
	Keepers     []Keeper
	// Checks is why a check of spec.checks holds the gate closed (status.checks); empty when
	// they all pass.
	Checks string
}

// NewInputs reads the inputs of gate from its spec and status, with its keepers.
func NewInputs(gate *gatingv1.Gate, keepers []Keeper) Inputs {
	in := Inputs{Default: gate.Spec.DefaultState(), Request: gate.Status.Request, Keepers: keepers, Checks: gate.Status.Checks}
	if t := gate.Status.RequestedAt; t != nil {
		in.RequestedAt = &t.Time
	}
	if t := gate.Status.ResetToDefaultAt; t != nil {
		in.ResetAt = &t.Time
	}
	return in
}

// KeeperState is the state the keepers hold the gate in at t (closed beats opened) and the name
// of the first keeper holding it.
func (in Inputs) KeeperState(t time.Time) (gatingv1.GateKeeperActive, string) {
	state, name := gatingv1.ActiveNone, ""
	for _, k := range in.Keepers {
		switch s := k.Holds(t); {
		case s == gatingv1.ActiveClosed:
			return s, k.Name
		case s == gatingv1.ActiveOpened && state == gatingv1.ActiveNone:
			state, name = s, k.Name
		}
	}
	return state, name
}

// StateAt is the effective state at t and its cause: "checks", "request", "gatekeeper/<name>"
// or "default", as the gate's history says. A failing check holds the gate closed above all:
// what it checks is not healthy now, whoever asked for the gate to open.
func (in Inputs) StateAt(t time.Time) (gatingv1.GateState, string) {
	if in.Checks != "" {
		return gatingv1.GateClosed, "checks"
	}
	if in.Request != nil && in.RequestedAt != nil && !t.Before(*in.RequestedAt) &&
		(in.ResetAt == nil || t.Before(*in.ResetAt)) {
		// An open request opened by approvals, or made by a promotion (for its revision), does
		// not override a keeper that holds the gate closed: a freeze wins over both.
		if s, name := in.KeeperState(t); (len(in.Request.ApprovedBy) > 0 || in.Request.Revision != "") && s == gatingv1.ActiveClosed {
			return gatingv1.GateClosed, "gatekeeper/" + name
		}
		return in.Request.State, "request"
	}
	if s, name := in.KeeperState(t); s != gatingv1.ActiveNone {
		return gatingv1.GateState(s), "gatekeeper/" + name
	}
	return in.Default, "default"
}
