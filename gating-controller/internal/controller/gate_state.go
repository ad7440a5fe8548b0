package controller

import (
	"fmt"
	"strings"
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

// maxTransitionSteps bounds the search for the next change of a gate's state through the
// transitions of its keepers (which may not change the gate's state, e.g. under a request).
const maxTransitionSteps = 256

// compiledKeeper is a GateKeeper of a gate: its compiled schedule, or the error that keeps it
// from being evaluated.
type compiledKeeper struct {
	name     string
	schedule *keeper.Keeper
	// err is why the spec does not parse; schedule is nil then.
	err error
	// failsClosed: the keeper is broken and could close its gate (see failsClosed).
	failsClosed bool
	// retry: how soon the gate looks again at the keeper's calendar, which no watch may report
	// on; zero when one does.
	retry time.Duration
}

// Holds is the state the keeper holds its gate in at t. A broken keeper that could close its
// gate holds it closed for as long as it is broken: a change freeze that cannot be evaluated
// must not leave the gate open.
func (k compiledKeeper) Holds(t time.Time) gatingv1.GateKeeperActive {
	switch {
	case k.schedule != nil:
		return gatingv1.GateKeeperActive(k.schedule.Holds(t))
	case k.failsClosed:
		return gatingv1.ActiveClosed
	default:
		return gatingv1.ActiveNone
	}
}

// gateInputs is everything a gate's state depends on (the precedence is schedule's), with the
// keepers as the controller knows them: parsed or broken.
type gateInputs struct {
	keeper.GateInputs
	keepers []compiledKeeper
}

func newGateInputs(gate *gatingv1.Gate, keepers []compiledKeeper) gateInputs {
	holders := make([]keeper.NamedHolder, len(keepers))
	for i, k := range keepers {
		holders[i] = keeper.NamedHolder{Name: k.name, Holder: k}
	}
	return gateInputs{GateInputs: keeper.NewGateInputs(gate, holders), keepers: keepers}
}

// nextChange is the first instant after now at which the state differs from state, if any. It
// walks the transitions of the request and the keepers in order; each keeper's next transition
// is kept until the walk passes it, so a step costs one keeper's search, not all of them.
func (in gateInputs) nextChange(now time.Time, state gatingv1.GateState) *time.Time {
	pending := make([]*time.Time, len(in.keepers))
	refresh := func(i int, after time.Time) {
		pending[i] = nil
		if in.keepers[i].schedule == nil {
			return // a broken keeper does not change until its spec does
		}
		if t, ok := in.keepers[i].schedule.NextTransition(after); ok {
			pending[i] = &t
		}
	}
	for i := range in.keepers {
		refresh(i, now)
	}
	cur := now
	for range maxTransitionSteps {
		var next *time.Time
		if in.ResetAt != nil && in.ResetAt.After(cur) {
			next = in.ResetAt
		}
		for _, t := range pending {
			if t != nil && (next == nil || t.Before(*next)) {
				next = t
			}
		}
		if next == nil {
			return nil
		}
		at := *next
		if s, _ := in.StateAt(at); s != state {
			return &at
		}
		cur = at
		for i, t := range pending {
			if t != nil && !t.After(cur) {
				refresh(i, cur)
			}
		}
	}
	return nil
}

// gateDecision is what the gate is now and why.
type gateDecision struct {
	state       gatingv1.GateState
	cause       string
	reason      string
	requestedBy string
	// approvedBy: the approvers of an `approval` cause.
	approvedBy []string
	// revision: the revision an `approval` cause opened the gate for, if the request named one.
	revision string
	next     *time.Time
	message  string
	// broken: the cause is a GateKeeper that cannot be evaluated.
	broken bool
}

func (d gateDecision) opened() bool { return d.state == gatingv1.GateOpened }

func (in gateInputs) decide(now time.Time) gateDecision {
	state, cause := in.StateAt(now)
	d := gateDecision{state: state, cause: cause, next: in.nextChange(now, state)}
	if cause == "request" || in.isResetRequest(state) {
		d.reason, d.requestedBy = in.Request.Reason, in.Request.RequestedBy
	}
	if cause == "request" && len(in.Request.ApprovedBy) > 0 {
		// An open request that spec.approval held, opened by its approvals.
		d.cause, d.approvedBy = "approval", in.Request.ApprovedBy
		if d.opened() {
			d.revision = in.Request.Revision
		}
	}
	if name, ok := strings.CutPrefix(cause, "gatekeeper/"); ok && in.keeperNamed(name).broken() {
		d.broken, d.reason = true, "invalid schedule: "+in.keeperNamed(name).err.Error()
	}
	d.message = in.message(d)
	return d
}

// isResetRequest: the last request asked for the default state and returned the gate to it.
func (in gateInputs) isResetRequest(state gatingv1.GateState) bool {
	return in.Request != nil && in.Request.State == state && in.RequestedAt != nil && in.ResetAt != nil &&
		in.ResetAt.Equal(*in.RequestedAt)
}

// message is the Opened condition's message documented in docs/gate.md: "Gate closed by
// default", "Gate scheduled for closing at T", "Gate close requested".
func (in gateInputs) message(d gateDecision) string {
	verb, opposite, request := "closed", "opening", "close"
	if d.opened() {
		verb, opposite, request = "opened", "closing", "open"
	}
	switch {
	case d.next != nil:
		return fmt.Sprintf("Gate scheduled for %s at %s", opposite, d.next.UTC().Format(time.RFC3339))
	case d.cause == "approval":
		return "Gate opened by approval"
	case d.cause == "request", d.cause == "default" && in.isResetRequest(d.state):
		return fmt.Sprintf("Gate %s requested", request)
	case d.cause == "default":
		return fmt.Sprintf("Gate %s by default", verb)
	case d.broken:
		return fmt.Sprintf("Gate %s as GateKeeper '%s' cannot be evaluated", verb, strings.TrimPrefix(d.cause, "gatekeeper/"))
	default:
		return fmt.Sprintf("Gate %s by GateKeeper '%s'", verb, strings.TrimPrefix(d.cause, "gatekeeper/"))
	}
}

// broken: the keeper exists and cannot be evaluated.
func (k *compiledKeeper) broken() bool { return k != nil && k.err != nil }

// keeperNamed is the keeper of that name, nil if none.
func (in gateInputs) keeperNamed(name string) *compiledKeeper {
	for i := range in.keepers {
		if in.keepers[i].name == name {
			return &in.keepers[i]
		}
	}
	return nil
}
