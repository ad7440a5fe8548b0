package gatestate

import (
	"fmt"
	"strings"
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// maxTransitionSteps bounds the search for the next change of a gate's state through the
// transitions of its keepers (which may not change the gate's state, e.g. under a request).
const maxTransitionSteps = 256

// NextChange is the first instant after now at which the state differs from state, if any. It
// walks the transitions of the request and the keepers in order; each keeper's next transition
// is kept until the walk passes it, so a step costs one keeper's search, not all of them.
func (in Inputs) NextChange(now time.Time, state gatingv1.GateState) *time.Time {
	pending := make([]*time.Time, len(in.Keepers))
	refresh := func(i int, after time.Time) {
		pending[i] = nil
		if in.Keepers[i].Schedule == nil {
			return // a broken keeper does not change until its spec does
		}
		if t, ok := in.Keepers[i].Schedule.NextTransition(after); ok {
			pending[i] = &t
		}
	}
	for i := range in.Keepers {
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

// Decision is what the gate is now and why.
type Decision struct {
	State gatingv1.GateState
	// Cause is "checks", "request", "approval", "gatekeeper/<name>" or "default".
	Cause       string
	Reason      string
	RequestedBy string
	// ApprovedBy: the approvers of an `approval` cause.
	ApprovedBy []string
	// Revision: the revision an `approval` cause (or a promotion's request) opened the gate for,
	// if the request named one.
	Revision string
	// Next is the next change of the state, if one is known.
	Next *time.Time
	// Message is the Opened condition's message.
	Message string
	// Broken: the cause is a GateKeeper that cannot be evaluated.
	Broken bool
}

// Opened: the decision is an opened gate.
func (d Decision) Opened() bool { return d.State == gatingv1.GateOpened }

// Decide is the state of the gate at now, why, and its next change.
func (in Inputs) Decide(now time.Time) Decision {
	state, cause := in.StateAt(now)
	d := Decision{State: state, Cause: cause, Next: in.NextChange(now, state)}
	if cause == "request" || in.isResetRequest(state) {
		d.Reason, d.RequestedBy = in.Request.Reason, in.Request.RequestedBy
	}
	if cause == "request" && d.Opened() && in.Request.Revision != "" {
		// The request of a promotion: opened for its revision only.
		d.Revision = in.Request.Revision
	}
	if cause == "checks" {
		d.Reason = in.Checks
	}
	if cause == "request" && len(in.Request.ApprovedBy) > 0 {
		// An open request that spec.approval held, opened by its approvals.
		d.Cause, d.ApprovedBy = "approval", in.Request.ApprovedBy
		if d.Opened() {
			d.Revision = in.Request.Revision
		}
	}
	if name, ok := strings.CutPrefix(cause, "gatekeeper/"); ok && in.keeperNamed(name).Broken() {
		d.Broken, d.Reason = true, "invalid schedule: "+in.keeperNamed(name).Err.Error()
	}
	d.Message = in.message(d)
	return d
}

// isResetRequest: the last request asked for the default state and returned the gate to it.
func (in Inputs) isResetRequest(state gatingv1.GateState) bool {
	return in.Request != nil && in.Request.State == state && in.RequestedAt != nil && in.ResetAt != nil &&
		in.ResetAt.Equal(*in.RequestedAt)
}

// message is the Opened condition's message documented in docs/gate.md: "Gate closed by
// default", "Gate scheduled for closing at T", "Gate close requested".
func (in Inputs) message(d Decision) string {
	verb, opposite, request := "closed", "opening", "close"
	if d.Opened() {
		verb, opposite, request = "opened", "closing", "open"
	}
	switch {
	case d.Next != nil:
		return fmt.Sprintf("Gate scheduled for %s at %s", opposite, d.Next.UTC().Format(time.RFC3339))
	case d.Cause == "checks":
		return "Gate closed by a failing check"
	case d.Cause == "approval":
		return "Gate opened by approval"
	case d.Cause == "request" && d.Revision != "":
		return fmt.Sprintf("Gate opened for revision '%s' by promotion", d.Revision)
	case d.Cause == "request", d.Cause == "default" && in.isResetRequest(d.State):
		return fmt.Sprintf("Gate %s requested", request)
	case d.Cause == "default":
		return fmt.Sprintf("Gate %s by default", verb)
	case d.Broken:
		return fmt.Sprintf("Gate %s as GateKeeper '%s' cannot be evaluated", verb, strings.TrimPrefix(d.Cause, "gatekeeper/"))
	default:
		return fmt.Sprintf("Gate %s by GateKeeper '%s'", verb, strings.TrimPrefix(d.Cause, "gatekeeper/"))
	}
}

// keeperNamed is the keeper of that name, nil if none.
func (in Inputs) keeperNamed(name string) *Keeper {
	for i := range in.Keepers {
		if in.Keepers[i].Name == name {
			return &in.Keepers[i]
		}
	}
	return nil
}
