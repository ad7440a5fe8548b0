package controller

import (
	"fmt"
	"strings"
	"time"
)

// cause is the one-line explanation of the gate's current state that the Ready condition carries
// and `kubectl gate status` shows: which request, schedule or default put the gate in its state,
// and until when. The Opened message keeps its documented forms ("Gate scheduled for opening at
// T"), which name the next change but not why the gate is in its state now.
func (in gateInputs) cause(d gateDecision) string {
	verb := "closed"
	if d.opened() {
		verb = "opened"
	}
	until := ""
	if d.next != nil {
		until = " until " + d.next.UTC().Format(time.RFC3339)
	}
	switch {
	case d.cause == "request":
		return fmt.Sprintf("Gate %s by the %s%s", verb, in.describeRequest(), in.requestEnd())
	case d.cause == "approval" && d.revision != "":
		return fmt.Sprintf("Gate %s for revision '%s' by the %s, approved by %s,%s", verb, d.revision, in.describeRequest(),
			strings.Join(d.approvedBy, ", "), in.requestEnd())
	case d.cause == "approval":
		return fmt.Sprintf("Gate %s by the %s, approved by %s,%s", verb, in.describeRequest(),
			strings.Join(d.approvedBy, ", "), in.requestEnd())
	case d.cause == "default":
		return fmt.Sprintf("Gate %s by default%s", verb, until)
	case d.broken:
		return fmt.Sprintf("Gate %s as GateKeeper '%s' cannot be evaluated (a broken schedule holds its gate closed until it is fixed)",
			verb, strings.TrimPrefix(d.cause, "gatekeeper/"))
	default:
		return fmt.Sprintf("Gate %s by the schedule of GateKeeper '%s'%s", verb, strings.TrimPrefix(d.cause, "gatekeeper/"), until)
	}
}

// describeRequest names the request in force: "close request of alice".
func (in gateInputs) describeRequest() string {
	s := requestVerb(in.Request.State) + " request"
	if in.Request.RequestedBy != "" {
		s += " of " + in.Request.RequestedBy
	}
	return s
}

// requestEnd says when the request in force ends; a request without a duration on a gate without
// spec.window never ends by itself, and saying so is the point.
func (in gateInputs) requestEnd() string {
	if in.ResetAt == nil {
		return " until the next request (no duration and no spec.window: it does not end by itself)"
	}
	return fmt.Sprintf(" until %s (for %s)", in.ResetAt.UTC().Format(time.RFC3339), in.ResetAt.Sub(*in.RequestedAt))
}
