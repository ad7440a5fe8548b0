package approval

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Pend makes the open request p pending approval in status, in place of applying it, unless a
// later request was made: it says whether it did, and why not.
func Pend(status *gatingv1.GateStatus, p gatingv1.GatePendingRequest) (bool, string) {
	at := p.RequestedAt.Time
	if status.RequestedAt != nil && at.Before(status.RequestedAt.Time) {
		return false, fmt.Sprintf("open request of %s ignored: the request of %s is later",
			at.UTC().Format(time.RFC3339), status.RequestedAt.UTC().Format(time.RFC3339))
	}
	if status.Approval == nil {
		status.Approval = &gatingv1.GateApprovalStatus{}
	}
	a := status.Approval
	if a.Pending != nil && at.Before(a.Pending.RequestedAt.Time) {
		return false, fmt.Sprintf("open request of %s ignored: the open request of %s is later",
			at.UTC().Format(time.RFC3339), a.Pending.RequestedAt.UTC().Format(time.RFC3339))
	}
	a.Pending = &p
	a.State, a.Rules, a.ApprovedBy, a.ApprovedRevision = gatingv1.ApprovalPending, nil, nil, ""
	return true, ""
}

// Withdraw: a close request made at, later than the pending open request, withdraws it. It says
// whether it did.
func Withdraw(a *gatingv1.GateApprovalStatus, at time.Time) bool {
	if a == nil || a.Pending == nil || a.State != gatingv1.ApprovalPending || at.Before(a.Pending.RequestedAt.Time) {
		return false
	}
	a.State = gatingv1.ApprovalWithdrawn
	return true
}

// Answer says which request a response whose GateApproval was created at answers: the pending
// one (its time), or none, and then why it is refused. skew is the clock difference tolerated
// between the API server, which stamps the GateApproval, and the request's maker.
func Answer(a *gatingv1.GateApprovalStatus, created time.Time, skew time.Duration) (request *metav1.Time, refused string) {
	switch {
	case !Pending(a):
		return nil, refusedOutsideRound(a)
	case created.Add(skew).Before(a.Pending.RequestedAt.Time):
		// Made before the request (recorded late, the controller was not running): it
		// answers an earlier one.
		return nil, "created before the " + RequestName(a.Pending) + " of " + a.Pending.RequestedAt.UTC().Format(time.RFC3339)
	}
	t := a.Pending.RequestedAt
	return &t, ""
}

// Pending: an open request is pending approval.
func Pending(a *gatingv1.GateApprovalStatus) bool {
	return a != nil && a.Pending != nil && a.State == gatingv1.ApprovalPending
}

func refusedOutsideRound(a *gatingv1.GateApprovalStatus) string {
	if a.Pending == nil {
		return "no open request was pending approval"
	}
	return "the " + RequestName(a.Pending) + " was already " + strings.ToLower(string(a.State))
}
