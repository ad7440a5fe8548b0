package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/approval"
)

// The Approved condition and the events of approvals (docs/gate.md, "Approvals").
const (
	ApprovedCondition     = "Approved"
	ApprovalPendingReason = "ApprovalPending"
	ApprovedReason        = "Approved"
	RejectedReason        = "Rejected"
	WithdrawnReason       = "Withdrawn"
	ApprovalRefusedReason = "ApprovalRefused"

	// responsesLimit bounds status.approval.responses.
	responsesLimit = 50
	// gateApprovalGateIndex indexes GateApprovals by the name of their gate.
	gateApprovalGateIndex = "spec.gate"
)

// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gateapprovals,verbs=get;list;watch;patch

// pendRequest makes an open request of a gate with spec.approval the request pending approval
// instead of applying it. It says whether it did, and why not.
func pendRequest(gate *gatingv1.Gate, req request) (bool, string) {
	st := &gate.Status
	if st.RequestedAt != nil && req.at.Before(st.RequestedAt.Time) {
		return false, fmt.Sprintf("open request of %s ignored: the request of %s is later",
			req.at.UTC().Format(time.RFC3339), st.RequestedAt.UTC().Format(time.RFC3339))
	}
	if st.Approval == nil {
		st.Approval = &gatingv1.GateApprovalStatus{}
	}
	a := st.Approval
	if a.Pending != nil && req.at.Before(a.Pending.RequestedAt.Time) {
		return false, fmt.Sprintf("open request of %s ignored: the open request of %s is later",
			req.at.UTC().Format(time.RFC3339), a.Pending.RequestedAt.UTC().Format(time.RFC3339))
	}
	a.Pending = &gatingv1.GatePendingRequest{
		RequestedBy: req.requestedBy, RequestedAt: metav1.NewTime(req.at), Reason: req.reason, Revision: req.revision,
	}
	if req.duration != nil {
		a.Pending.Duration = &metav1.Duration{Duration: *req.duration}
	}
	a.State, a.Rules, a.ApprovedBy, a.ApprovedRevision = gatingv1.ApprovalPending, nil, nil, ""
	return true, ""
}

// withdrawPending: a close request later than the pending open request withdraws it.
func withdrawPending(gate *gatingv1.Gate, req request) bool {
	a := gate.Status.Approval
	if a == nil || a.Pending == nil || a.State != gatingv1.ApprovalPending || req.at.Before(a.Pending.RequestedAt.Time) {
		return false
	}
	a.State = gatingv1.ApprovalWithdrawn
	return true
}

// approvalOutcome is what reconcileApproval decided, for the events and the requeue.
type approvalOutcome struct {
	// next is when a counted approval expires, if one may.
	next *time.Time
}

// reconcileApproval records the new GateApprovals of the gate in status.approval.responses (and
// makes the gate their owner), counts the responses to the pending open request, and opens the
// gate (applies the request) once they satisfy spec.approval. newPending: the request became
// pending in this reconcile.
func (r *GateReconciler) reconcileApproval(ctx context.Context, gate *gatingv1.Gate, keepers []keeper, now time.Time, newPending bool) (approvalOutcome, error) {
	spec := gate.Spec.Approval
	if spec == nil {
		conditions.Delete(gate, ApprovedCondition)
		return approvalOutcome{}, nil
	}
	if gate.Status.Approval == nil {
		gate.Status.Approval = &gatingv1.GateApprovalStatus{}
	}
	st := gate.Status.Approval
	list := &gatingv1.GateApprovalList{}
	if err := r.List(ctx, list, client.InNamespace(gate.Namespace), client.MatchingFields{gateApprovalGateIndex: gate.Name}); err != nil {
		return approvalOutcome{}, fmt.Errorf("listing the GateApprovals of the gate: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	objects := map[string]*gatingv1.GateApproval{}
	var recorded []gatingv1.GateResponse
	for i := range list.Items {
		ga := &list.Items[i]
		objects[ga.Name] = ga
		// The gate's status is what records a response: the gate is made the owner of a
		// GateApproval before the status is written, so an owned one missing from the status
		// was recorded by a write that failed, unless it is older than the pending request
		// (recorded long ago and since dropped from the bounded list).
		if responseRecorded(st, ga.Name) || ownedBy(ga, gate) && !answersPending(st, ga) {
			continue
		}
		entry := gatingv1.GateResponse{
			Name: ga.Name, User: ga.Spec.User, Decision: ga.Spec.Decision, Reason: ga.Spec.Reason,
			Revision: ga.Spec.Revision, Time: metav1.NewTime(now),
		}
		switch {
		case st.Pending != nil && st.State == gatingv1.ApprovalPending &&
			ga.CreationTimestamp.Add(clockSkew).Before(st.Pending.RequestedAt.Time):
			// Made before the request (recorded late, the controller was not running): it
			// answers an earlier one.
			entry.Refused = "created before the " + requestName(st.Pending) + " of " +
				st.Pending.RequestedAt.UTC().Format(time.RFC3339)
		case st.Pending != nil && st.State == gatingv1.ApprovalPending:
			t := st.Pending.RequestedAt
			entry.Request = &t
		default:
			entry.Refused = refusedOutsideRound(st)
		}
		if err := r.own(ctx, ga, gate); err != nil {
			return approvalOutcome{}, err
		}
		st.Responses = append([]gatingv1.GateResponse{entry}, st.Responses...)
		recorded = append(recorded, entry)
	}
	if len(st.Responses) > responsesLimit {
		st.Responses = st.Responses[:responsesLimit]
	}

	var out approvalOutcome
	if st.Pending != nil && st.State == gatingv1.ApprovalPending {
		if spec.PreventSelfApproval && st.Pending.Revision != "" && len(st.Pending.Authors) == 0 {
			// Looked for until found: the source may fetch the revision after the request.
			authors, err := revisionAuthors(ctx, readerOr(r.apiReader, r.Client), gate.Namespace, st.Pending.Revision)
			if err != nil {
				// Not counted without them: an author's approval must not slip through.
				return approvalOutcome{}, err
			}
			st.Pending.Authors = authors
		}
		out = r.count(ctx, gate, keepers, objects, now)
	}
	for _, e := range recorded {
		i := responseIndex(st, e.Name)
		if i < 0 {
			continue
		}
		if refused := st.Responses[i].Refused; strings.HasPrefix(refused, "self-approval") || strings.HasPrefix(refused, "the response ") {
			what := "approval"
			if e.Decision == gatingv1.DecisionReject {
				what = "rejection"
			}
			msg := fmt.Sprintf("%s of %s refused: %s", what, e.User, refused)
			log.FromContext(ctx).Info(msg)
			r.EventRecorder.Event(gate, corev1.EventTypeWarning, ApprovalRefusedReason, msg)
		}
	}
	state, _ := newGateInputs(gate, keepers).StateAt(now)
	r.markApproved(ctx, gate, newPending, now, state)
	return out, nil
}

// count evaluates the responses recorded for the pending request, newest last, and decides it.
func (r *GateReconciler) count(ctx context.Context, gate *gatingv1.Gate, keepers []keeper, objects map[string]*gatingv1.GateApproval, now time.Time) approvalOutcome {
	spec, st := gate.Spec.Approval, gate.Status.Approval
	groups := map[string][]string{}
	var idx []int // responses of the round, oldest first
	for i := len(st.Responses) - 1; i >= 0; i-- {
		e := st.Responses[i]
		if e.Request != nil && e.Request.Equal(&st.Pending.RequestedAt) {
			idx = append(idx, i)
			if ga := objects[e.Name]; ga != nil {
				if _, ok := groups[e.User]; !ok {
					groups[e.User] = ga.Spec.Groups
				}
			}
		}
	}
	rules := make([]approval.Rule, len(spec.Rules))
	for i, rule := range spec.Rules {
		rules[i] = approval.Rule{Name: rule.Name, Minimum: int(rule.Minimum), Fits: fits(rule.Approvers, groups)}
	}
	fitsAny := func(user string) bool {
		if len(rules) == 0 {
			return true
		}
		for _, rule := range rules {
			if rule.Fits(user) {
				return true
			}
		}
		return false
	}

	var out approvalOutcome
	var candidates []string
	var rejection *gatingv1.GateResponse
	for _, i := range idx {
		e := &st.Responses[i]
		e.Counted, e.Refused = false, ""
		switch {
		case objects[e.Name] == nil:
			e.Refused = "the GateApproval was deleted"
		case st.Pending.Revision != "" && e.Revision != st.Pending.Revision:
			e.Refused = revisionMismatch(e.Revision, st.Pending.Revision)
		case e.Decision == gatingv1.DecisionApprove && spec.PreventSelfApproval && e.User == st.Pending.RequestedBy:
			e.Refused = "self-approval: " + e.User + " requested the opening and spec.approval.preventSelfApproval is set"
		case e.Decision == gatingv1.DecisionApprove && spec.PreventSelfApproval && authoredBy(e.User, st.Pending.Authors):
			e.Refused = "self-approval: " + e.User + " authored revision '" + st.Pending.Revision +
				"' and spec.approval.preventSelfApproval is set"
		case !fitsAny(e.User):
			e.Refused = "not an approver of any rule of spec.approval"
		case e.Decision == gatingv1.DecisionReject:
			e.Counted = true
			if rejection == nil {
				rejection = e
			}
		case spec.Expiry != nil && !now.Before(e.Time.Add(spec.Expiry.Duration)):
			e.Refused = fmt.Sprintf("expired at %s (spec.approval.expiry %s)",
				e.Time.Add(spec.Expiry.Duration).UTC().Format(time.RFC3339), spec.Expiry.Duration)
		case slices.Contains(candidates, e.User):
			e.Refused = "a second approval of " + e.User + " counts once"
		default:
			e.Counted = true
			candidates = append(candidates, e.User)
			if spec.Expiry != nil {
				t := e.Time.Add(spec.Expiry.Duration)
				if out.next == nil || t.Before(*out.next) {
					out.next = &t
				}
			}
		}
	}
	if rejection != nil {
		st.State = gatingv1.ApprovalRejected
		for _, i := range idx {
			if e := &st.Responses[i]; e.Decision == gatingv1.DecisionApprove && e.Counted {
				e.Counted, e.Refused = false, "the request was rejected by "+rejection.User
			}
		}
		st.Rules, st.ApprovedBy = nil, nil
		out.next = nil
		return out
	}

	assigned := approval.Match(rules, candidates)
	st.Rules = make([]gatingv1.GateRuleProgress, len(spec.Rules))
	for i, rule := range spec.Rules {
		st.Rules[i] = gatingv1.GateRuleProgress{Name: rule.Name, Minimum: rule.Minimum, ApprovedBy: assigned.ByRule[i]}
	}
	st.ApprovedBy = candidates
	if !assigned.Satisfied(rules) || len(candidates) < spec.RequiredApprovals() {
		return out
	}
	st.State, st.ApprovedRevision = gatingv1.ApprovalApproved, st.Pending.Revision
	out.next = nil
	in := newGateInputs(gate, keepers)
	keeperState, _ := in.KeeperState(now)
	req := request{state: gatingv1.GateOpened, at: now, reason: st.Pending.Reason, requestedBy: st.Pending.RequestedBy}
	if st.Pending.Duration != nil {
		req.duration = &st.Pending.Duration.Duration
	}
	if ok, why := applyRequest(gate, req, keeperState); !ok {
		log.FromContext(ctx).Info(why)
		return out
	}
	gate.Status.Request.ApprovedBy = slices.Clone(candidates)
	gate.Status.Request.Revision = st.Pending.Revision
	return out
}

// revisionMismatch is why a response does not count toward an open request for one revision.
func revisionMismatch(response, pending string) string {
	if response == "" {
		return "the response names no revision; the open request is for revision '" + pending + "'"
	}
	return "the response is for revision '" + response + "'; the open request is for revision '" + pending + "'"
}

// markApproved sets the Approved condition and sends the event of a change of the approval;
// state is the gate's state with it.
func (r *GateReconciler) markApproved(ctx context.Context, gate *gatingv1.Gate, newPending bool, now time.Time, state gatingv1.GateState) {
	st := gate.Status.Approval
	if st.Pending == nil {
		conditions.Delete(gate, ApprovedCondition)
		return
	}
	before := conditions.Get(gate, ApprovedCondition)
	var reason, msg string
	var kind gatingv1.GateEventType
	switch st.State {
	case gatingv1.ApprovalApproved:
		reason, kind = ApprovedReason, gatingv1.GateEventApproved
		msg = "approved by " + strings.Join(st.ApprovedBy, ", ")
		cond := msg
		if st.ApprovedRevision != "" {
			cond = "revision '" + st.ApprovedRevision + "' " + msg
		}
		conditions.MarkTrue(gate, ApprovedCondition, reason, "%s", cond)
	case gatingv1.ApprovalRejected:
		reason, kind = RejectedReason, gatingv1.GateEventRejected
		msg = rejectionMessage(st)
		conditions.MarkFalse(gate, ApprovedCondition, reason, "%s", msg)
	case gatingv1.ApprovalWithdrawn:
		reason = WithdrawnReason
		msg = "withdrawn by a later close request"
		conditions.MarkFalse(gate, ApprovedCondition, reason, "%s", msg)
	default:
		reason, kind = ApprovalPendingReason, gatingv1.GateEventApprovalPending
		msg = waitingMessage(gate)
		conditions.MarkFalse(gate, ApprovedCondition, reason, "%s", msg)
	}
	changed := before == nil || before.Reason != reason || newPending
	if !changed || kind == "" {
		return
	}
	p := st.Pending
	if !r.approvals.first(gate.UID, reason+"|"+p.RequestedAt.UTC().String()+"|"+p.RequestedBy+"|"+p.Revision) {
		return
	}
	event := requestName(st.Pending) + ": " + msg
	log.FromContext(ctx).Info(event, "approval", string(st.State))
	r.EventRecorder.Event(gate, corev1.EventTypeNormal, reason, event)
	r.notifyApproval(gate, kind, now, event, state)
}

// notifyApproval hands an approval event to the GateNotifications, as notifyTransition does the
// gate's changes of state.
func (r *GateReconciler) notifyApproval(gate *gatingv1.Gate, kind gatingv1.GateEventType, now time.Time, message string, state gatingv1.GateState) {
	if r.Notifier == nil {
		return
	}
	st := gate.Status.Approval
	ev := gateEvent(gate, kind, now)
	ev.State = string(state)
	ev.Message, ev.Cause, ev.RequestedBy, ev.Reason = message, "approval", st.Pending.RequestedBy, st.Pending.Reason
	r.Notifier.Enqueue(ev)
}

// requestName is "open request of alice".
func requestName(p *gatingv1.GatePendingRequest) string {
	s := "open request"
	if p.RequestedBy != "" {
		s += " of " + p.RequestedBy
	}
	if p.Revision != "" {
		s += " for revision " + p.Revision
	}
	return s
}

func rejectionMessage(st *gatingv1.GateApprovalStatus) string {
	for i := len(st.Responses) - 1; i >= 0; i-- {
		e := st.Responses[i]
		if e.Decision == gatingv1.DecisionReject && e.Counted && e.Request != nil && e.Request.Equal(&st.Pending.RequestedAt) {
			msg := "rejected by " + e.User
			if e.Reason != "" {
				msg += ": " + e.Reason
			}
			return msg
		}
	}
	return "rejected"
}

// waitingMessage says what the pending request waits for: "waiting for 1 more approval from rule
// sre (ana, bo); 1 of 2 in all".
func waitingMessage(gate *gatingv1.Gate) string {
	spec, st := gate.Spec.Approval, gate.Status.Approval
	var parts []string
	for i, rule := range spec.Rules {
		have := 0
		if i < len(st.Rules) {
			have = len(st.Rules[i].ApprovedBy)
		}
		if missing := int(rule.Minimum) - have; missing > 0 {
			parts = append(parts, fmt.Sprintf("%d more %s from rule %s (%s)", missing, plural(missing), rule.Name, approversList(rule.Approvers)))
		}
	}
	required := spec.RequiredApprovals()
	if len(parts) == 0 {
		missing := required - len(st.ApprovedBy)
		parts = append(parts, fmt.Sprintf("%d more %s", missing, plural(missing)))
	}
	return fmt.Sprintf("waiting for %s; %d of %d in all", strings.Join(parts, " and "), len(st.ApprovedBy), required)
}

func plural(n int) string {
	if n == 1 {
		return "approval"
	}
	return "approvals"
}

func approversList(a gatingv1.GateApprovers) string {
	names := slices.Clone(a.Users)
	for _, g := range a.Groups {
		names = append(names, "group "+g)
	}
	return strings.Join(names, ", ")
}

// approvalNote is what the Ready condition adds about a pending or rejected open request.
func approvalNote(gate *gatingv1.Gate) string {
	st := gate.Status.Approval
	if gate.Spec.Approval == nil || st == nil || st.Pending == nil {
		return ""
	}
	switch st.State {
	case gatingv1.ApprovalPending:
		return "; the " + requestName(st.Pending) + " is pending approval: " + waitingMessage(gate)
	case gatingv1.ApprovalRejected:
		return "; the " + requestName(st.Pending) + " was " + rejectionMessage(st)
	}
	return ""
}

func fits(a gatingv1.GateApprovers, groups map[string][]string) func(string) bool {
	return func(user string) bool {
		if slices.Contains(a.Users, user) {
			return true
		}
		for _, g := range groups[user] {
			if slices.Contains(a.Groups, g) {
				return true
			}
		}
		return false
	}
}

func refusedOutsideRound(st *gatingv1.GateApprovalStatus) string {
	if st.Pending == nil {
		return "no open request was pending approval"
	}
	return "the " + requestName(st.Pending) + " was already " + strings.ToLower(string(st.State))
}

func responseRecorded(st *gatingv1.GateApprovalStatus, name string) bool {
	return responseIndex(st, name) >= 0
}

func responseIndex(st *gatingv1.GateApprovalStatus, name string) int {
	for i, e := range st.Responses {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// answersPending: an open request is pending approval, and ga was made after it.
func answersPending(st *gatingv1.GateApprovalStatus, ga *gatingv1.GateApproval) bool {
	return st.Pending != nil && st.State == gatingv1.ApprovalPending &&
		!ga.CreationTimestamp.Add(clockSkew).Before(st.Pending.RequestedAt.Time)
}

// ownedBy: the GateApproval was recorded before (the controller made the gate its owner).
func ownedBy(ga *gatingv1.GateApproval, gate *gatingv1.Gate) bool {
	for _, ref := range ga.OwnerReferences {
		if ref.UID == gate.UID {
			return true
		}
	}
	return false
}

// own makes the gate the owner of a recorded GateApproval, so that it goes with the gate and is
// not recorded twice.
func (r *GateReconciler) own(ctx context.Context, ga *gatingv1.GateApproval, gate *gatingv1.Gate) error {
	if ownedBy(ga, gate) {
		return nil
	}
	patch := client.MergeFrom(ga.DeepCopy())
	ga.OwnerReferences = append(ga.OwnerReferences, metav1.OwnerReference{
		APIVersion: gatingv1.GroupVersion.String(), Kind: gatingv1.GateKind, Name: gate.Name, UID: gate.UID,
	})
	if err := r.Patch(ctx, ga, patch); err != nil {
		return fmt.Errorf("recording GateApproval %s: %w", ga.Name, err)
	}
	return nil
}
