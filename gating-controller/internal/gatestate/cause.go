package gatestate

import (
	"fmt"
	"strings"
	"time"
)

// Cause is the one-line explanation of the gate's current state that the Ready condition carries
// and `kubectl gate status` shows: which request, schedule or default put the gate in its state,
// and until when. The Opened message keeps its documented forms ("Gate scheduled for opening at
// T"), which name the next change but not why the gate is in its state now.
func (in Inputs) Cause(d Decision) string {
	verb := "closed"
	if d.Opened() {
		verb = "opened"
	}
	until := ""
	if d.Next != nil {
		until = " until " + d.Next.UTC().Format(time.RFC3339)
	}
	switch {
	case d.Cause == "checks":
		return "Gate closed as a check fails: " + in.Checks
	case d.Cause == "request" && d.Revision != "":
		return fmt.Sprintf("Gate %s for revision '%s' by the %s%s", verb, d.Revision, in.describeRequest(), in.requestEnd())
	case d.Cause == "request":
		return fmt.Sprintf("Gate %s by the %s%s", verb, in.describeRequest(), in.requestEnd())
	case d.Cause == "approval" && d.Revision != "":
		return fmt.Sprintf("Gate %s for revision '%s' by the %s, approved by %s,%s", verb, d.Revision, in.describeRequest(),
			strings.Join(d.ApprovedBy, ", "), in.requestEnd())
	case d.Cause == "approval":
		return fmt.Sprintf("Gate %s by the %s, approved by %s,%s", verb, in.describeRequest(),
			strings.Join(d.ApprovedBy, ", "), in.requestEnd())
	case d.Cause == "default":
		return fmt.Sprintf("Gate %s by default%s", verb, until)
	case d.Broken:
		return fmt.Sprintf("Gate %s as GateKeeper '%s' cannot be evaluated (a broken schedule holds its gate closed until it is fixed)",
			verb, strings.TrimPrefix(d.Cause, "gatekeeper/"))
	default:
		return fmt.Sprintf("Gate %s by the schedule of GateKeeper '%s'%s", verb, strings.TrimPrefix(d.Cause, "gatekeeper/"), until)
	}
}

// describeRequest names the request in force: "close request of alice".
func (in Inputs) describeRequest() string {
	s := RequestVerb(in.Request.State) + " request"
	if in.Request.RequestedBy != "" {
		s += " of " + in.Request.RequestedBy
	}
	return s
}

// requestEnd says when the request in force ends; a request without a duration on a gate without
// spec.window never ends by itself, and saying so is the point.
func (in Inputs) requestEnd() string {
	if in.ResetAt == nil {
		return " until the next request (no duration and no spec.window: it does not end by itself)"
	}
	return fmt.Sprintf(" until %s (for %s)", in.ResetAt.UTC().Format(time.RFC3339), in.ResetAt.Sub(*in.RequestedAt))
}
