package gatestate

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// ClockSkew is how far in the future a request time may be and still count as now: clocks of the
// user's machine and the controller's differ a little.
const ClockSkew = time.Minute

// Request is an open or close request read from a Gate's annotations.
type Request struct {
	State       gatingv1.GateState
	At          time.Time
	Reason      string
	RequestedBy string
	Duration    *time.Duration
	// Revision is open.gate.fluxcd.io/revision: on a gate with spec.approval, the revision the
	// approval is for (docs/gate.md, "Revisions"); or the revision a promotion opens the gate for.
	Revision string
	// Promotion: the request of spec.promotion, for Revision only, made by the controller.
	Promotion bool
}

// requestAnnotations are the annotation keys of one kind of request.
type requestAnnotations struct {
	state                             gatingv1.GateState
	at, reason, requestedBy, duration string
	lastHandled                       func(*gatingv1.GateStatus) *string
}

var requestKinds = []requestAnnotations{
	{
		state: gatingv1.GateOpened, at: gatesapi.OpenRequestAnnotation, reason: gatingv1.OpenReasonAnnotation,
		requestedBy: gatingv1.OpenRequestedByAnnotation, duration: gatingv1.OpenDurationAnnotation,
		lastHandled: func(s *gatingv1.GateStatus) *string { return &s.LastHandledOpenAt },
	},
	{
		state: gatingv1.GateClosed, at: gatesapi.CloseRequestAnnotation, reason: gatingv1.CloseReasonAnnotation,
		requestedBy: gatingv1.CloseRequestedByAnnotation, duration: gatingv1.CloseDurationAnnotation,
		lastHandled: func(s *gatingv1.GateStatus) *string { return &s.LastHandledCloseAt },
	},
}

// TakeRequests returns the open and close requests of the gate's annotations that were not
// handled yet, oldest first, and marks them handled in the status so that re-applying the same
// annotation (from Git, say) does nothing new. Requests that cannot be honoured come back as
// warnings saying why; they are marked handled too, so the warning is given once.
func TakeRequests(gate *gatingv1.Gate, now time.Time) (valid []Request, warnings []string) {
	ann := gate.GetAnnotations()
	for _, kind := range requestKinds {
		raw := ann[kind.at]
		handled := kind.lastHandled(&gate.Status)
		if raw == "" || raw == *handled {
			continue
		}
		*handled = raw
		verb := RequestVerb(kind.state)
		at, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf(
				"%s request ignored: %s '%s' is not an RFC 3339 time such as 2026-11-22T10:00:00Z", verb, kind.at, raw))
			continue
		}
		if at.After(now.Add(ClockSkew)) {
			warnings = append(warnings, fmt.Sprintf(
				"%s request ignored: %s '%s' is in the future (now is %s)", verb, kind.at, raw, now.UTC().Format(time.RFC3339)))
			continue
		}
		if at.After(now) {
			at = now // within the skew: it counts as now, so it is in force at once
		}
		req := Request{State: kind.state, At: at, Reason: ann[kind.reason], RequestedBy: ann[kind.requestedBy]}
		if kind.state == gatingv1.GateOpened {
			req.Revision = ann[gatingv1.OpenRevisionAnnotation]
		}
		if d := ann[kind.duration]; d != "" {
			dur, err := time.ParseDuration(d)
			if err != nil || dur <= 0 {
				warnings = append(warnings, fmt.Sprintf(
					"%s request ignored: %s '%s' is not a positive duration such as 2h", verb, kind.duration, d))
				continue
			}
			req.Duration = &dur
		}
		valid = append(valid, req)
	}
	// Stable: on a tie the close request, read last, wins; closing is the safe side.
	sort.SliceStable(valid, func(i, j int) bool { return valid[i].At.Before(valid[j].At) })
	return valid, warnings
}

// ApplyRequest makes req the request in force unless a later one already is (the later of open
// and close wins). A request for the gate's default state returns the gate to its default at once,
// unless a GateKeeper holds the gate in the other state: then it overrides the keeper for its
// window like any request.
func ApplyRequest(gate *gatingv1.Gate, req Request, keeperState gatingv1.GateKeeperActive) (bool, string) {
	st := &gate.Status
	if st.RequestedAt != nil && req.At.Before(st.RequestedAt.Time) {
		return false, fmt.Sprintf("%s request of %s ignored: the request of %s is later",
			RequestVerb(req.State), req.At.UTC().Format(time.RFC3339), st.RequestedAt.UTC().Format(time.RFC3339))
	}
	at := metav1.NewTime(req.At)
	st.RequestedAt = &at
	st.Request = &gatingv1.GateRequest{State: req.State, Reason: req.Reason, RequestedBy: req.RequestedBy}
	if req.Promotion {
		st.Request.Revision = req.Revision
	}

	window := req.Duration
	if window == nil && gate.Spec.Window != nil {
		window = &gate.Spec.Window.Duration
	}
	keeperOpposes := keeperState != gatingv1.ActiveNone && string(keeperState) != string(req.State)
	switch {
	case req.State == gate.Spec.DefaultState() && !keeperOpposes:
		st.ResetToDefaultAt = &at
	case window != nil:
		end := metav1.NewTime(req.At.Add(*window))
		st.ResetToDefaultAt = &end
	default:
		st.ResetToDefaultAt = nil
	}
	return true, ""
}

// RequestVerb names the request for a state: "open" or "close".
func RequestVerb(state gatingv1.GateState) string {
	if state == gatingv1.GateClosed {
		return "close"
	}
	return "open"
}
