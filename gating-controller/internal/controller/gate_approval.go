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
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
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

// pendingRequest is req as status.approval.pending records it.
func pendingRequest(req gatestate.Request) gatingv1.GatePendingRequest {
	p := gatingv1.GatePendingRequest{
		RequestedBy: req.RequestedBy, RequestedAt: metav1.NewTime(req.At), Reason: req.Reason, Revision: req.Revision,
	}
	if req.Duration != nil {
		p.Duration = &metav1.Duration{Duration: *req.Duration}
	}
	return p
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
func (r *GateReconciler) reconcileApproval(ctx context.Context, gate *gatingv1.Gate, keepers []gatestate.Keeper, now time.Time, newPending bool) (approvalOutcome, error) {
	spec := gate.Spec.Approval
	if spec == nil {
		conditions.Delete(gate, ApprovedCondition)
		return approvalOutcome{}, nil
	}
	if gate.Status.Approval == nil {
		gate.Status.Approval = &gatingv1.GateApprovalStatus{}
	}
	st := gate.Status.Approval
	responders, recorded, err := r.recordResponses(ctx, gate, now)
	if err != nil {
		return approvalOutcome{}, err
	}

	var out approvalOutcome
	if approval.Pending(st) {
		if spec.PreventSelfApproval && st.Pending.Revision != "" && len(st.Pending.Authors) == 0 {
			// Looked for until found: the source may fetch the revision after the request.
			authors, err := revisionAuthors(ctx, readerOr(r.apiReader, r.Client), gate.Namespace, st.Pending.Revision)
			if err != nil {
				// Not counted without them: an author's approval must not slip through.
				return approvalOutcome{}, err
			}
			st.Pending.Authors = authors
		}
		counted := approval.Count(spec, st, responders, now)
		out.next = counted.Next
		if counted.Approved {
			r.openApproved(ctx, gate, keepers, now)
		}
	}
	for _, e := range recorded {
		i := responseIndex(st, e.Name)
		if i < 0 {
			continue
		}
		if refused := st.Responses[i].Refused; approval.Warned(refused) {
			what := "approval"
			if e.Decision == gatingv1.DecisionReject {
				what = "rejection"
			}
			msg := fmt.Sprintf("%s of %s refused: %s", what, e.User, refused)
			log.FromContext(ctx).Info(msg)
			r.EventRecorder.Event(gate, corev1.EventTypeWarning, ApprovalRefusedReason, msg)
		}
	}
	state, _ := gatestate.NewInputs(gate, keepers).StateAt(now)
	r.markApproved(ctx, gate, newPending, now, state)
	return out, nil
}

// recordResponses records the GateApprovals of the gate not recorded yet in
// status.approval.responses, newest first, and makes the gate their owner. It returns what
// approval.Count reads of every GateApproval of the gate, and the responses it recorded.
func (r *GateReconciler) recordResponses(ctx context.Context, gate *gatingv1.Gate, now time.Time) (map[string]*approval.Responder, []gatingv1.GateResponse, error) {
	st := gate.Status.Approval
	list := &gatingv1.GateApprovalList{}
	if err := r.List(ctx, list, client.InNamespace(gate.Namespace), client.MatchingFields{gateApprovalGateIndex: gate.Name}); err != nil {
		return nil, nil, fmt.Errorf("listing the GateApprovals of the gate: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	responders := map[string]*approval.Responder{}
	var recorded []gatingv1.GateResponse
	for i := range list.Items {
		ga := &list.Items[i]
		responders[ga.Name] = &approval.Responder{Groups: ga.Spec.Groups}
		// The gate's status is what records a response: the gate is made the owner of a
		// GateApproval before the status is written, so an owned one missing from the status
		// was recorded by a write that failed, unless it is older than the pending request
		// (recorded long ago and since dropped from the bounded list).
		if responseRecorded(st, ga.Name) || ownedBy(ga, gate) && !answersPending(st, ga.CreationTimestamp.Time) {
			continue
		}
		entry := gatingv1.GateResponse{
			Name: ga.Name, User: ga.Spec.User, Decision: ga.Spec.Decision, Reason: ga.Spec.Reason,
			Revision: ga.Spec.Revision, Time: metav1.NewTime(now),
		}
		entry.Request, entry.Refused = approval.Answer(st, ga.CreationTimestamp.Time, gatestate.ClockSkew)
		if err := r.own(ctx, ga, gate); err != nil {
			return nil, nil, err
		}
		st.Responses = append([]gatingv1.GateResponse{entry}, st.Responses...)
		recorded = append(recorded, entry)
	}
	if len(st.Responses) > responsesLimit {
		st.Responses = st.Responses[:responsesLimit]
	}
	return responders, recorded, nil
}

// openApproved applies the approved pending request of the gate, as the approvers' request.
func (r *GateReconciler) openApproved(ctx context.Context, gate *gatingv1.Gate, keepers []gatestate.Keeper, now time.Time) {
	st := gate.Status.Approval
	keeperState, _ := gatestate.NewInputs(gate, keepers).KeeperState(now)
	req := gatestate.Request{State: gatingv1.GateOpened, At: now, Reason: st.Pending.Reason, RequestedBy: st.Pending.RequestedBy}
	if st.Pending.Duration != nil {
		req.Duration = &st.Pending.Duration.Duration
	}
	if ok, why := gatestate.ApplyRequest(gate, req, keeperState); !ok {
		log.FromContext(ctx).Info(why)
		return
	}
	gate.Status.Request.ApprovedBy = slices.Clone(st.ApprovedBy)
	gate.Status.Request.Revision = st.Pending.Revision
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
		msg = approval.Rejection(st)
		conditions.MarkFalse(gate, ApprovedCondition, reason, "%s", msg)
	case gatingv1.ApprovalWithdrawn:
		reason = WithdrawnReason
		msg = "withdrawn by a later close request"
		conditions.MarkFalse(gate, ApprovedCondition, reason, "%s", msg)
	default:
		reason, kind = ApprovalPendingReason, gatingv1.GateEventApprovalPending
		msg = approval.Waiting(gate.Spec.Approval, st)
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
	event := approval.RequestName(st.Pending) + ": " + msg
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

// answersPending: an open request is pending approval, and a GateApproval created then answers
// it.
func answersPending(st *gatingv1.GateApprovalStatus, created time.Time) bool {
	request, _ := approval.Answer(st, created, gatestate.ClockSkew)
	return request != nil
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
