package approval

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func TestPend(t *testing.T) {
	at := func(minutes int) metav1.Time {
		return metav1.NewTime(requested.Add(time.Duration(minutes) * time.Minute))
	}
	for name, tc := range map[string]struct {
		status  gatingv1.GateStatus
		request int // minutes after requested
		pended  bool
		why     string
	}{
		"a first request pends": {request: 0, pended: true},
		"a later open request replaces the pending one": {
			status:  gatingv1.GateStatus{Approval: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalRejected, Pending: &gatingv1.GatePendingRequest{RequestedAt: at(0)}, ApprovedBy: []string{"bo"}}},
			request: 1, pended: true,
		},
		"an earlier open request is ignored": {
			status:  gatingv1.GateStatus{Approval: &gatingv1.GateApprovalStatus{Pending: &gatingv1.GatePendingRequest{RequestedAt: at(5)}}},
			request: 1, why: "open request of 2026-03-02T09:01:00Z ignored: the open request of 2026-03-02T09:05:00Z is later",
		},
		"an open request older than the gate's last request is ignored": {
			status:  gatingv1.GateStatus{RequestedAt: new(at(5))},
			request: 1, why: "open request of 2026-03-02T09:01:00Z ignored: the request of 2026-03-02T09:05:00Z is later",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := gatingv1.GatePendingRequest{RequestedBy: "ana", RequestedAt: at(tc.request), Revision: "main@sha1:abc"}
			pended, why := Pend(&tc.status, p)
			g.Expect(pended).To(Equal(tc.pended))
			g.Expect(why).To(Equal(tc.why))
			if tc.pended {
				g.Expect(tc.status.Approval.Pending).To(Equal(&p))
				g.Expect(tc.status.Approval.State).To(Equal(gatingv1.ApprovalPending))
				g.Expect(tc.status.Approval.ApprovedBy).To(BeNil())
			}
		})
	}
}

func TestWithdraw(t *testing.T) {
	pending := func(state gatingv1.GateApprovalState) *gatingv1.GateApprovalStatus {
		return &gatingv1.GateApprovalStatus{State: state, Pending: &gatingv1.GatePendingRequest{RequestedAt: metav1.NewTime(requested)}}
	}
	for name, tc := range map[string]struct {
		status    *gatingv1.GateApprovalStatus
		at        time.Time
		withdrawn bool
	}{
		"a later close request withdraws":        {status: pending(gatingv1.ApprovalPending), at: now, withdrawn: true},
		"an earlier close request does not":      {status: pending(gatingv1.ApprovalPending), at: requested.Add(-time.Second)},
		"an approved request is not withdrawn":   {status: pending(gatingv1.ApprovalApproved), at: now},
		"nothing pending, nothing to withdraw":   {status: &gatingv1.GateApprovalStatus{}, at: now},
		"a gate without approvals has no status": {at: now},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Withdraw(tc.status, tc.at)).To(Equal(tc.withdrawn))
			if tc.withdrawn {
				g.Expect(tc.status.State).To(Equal(gatingv1.ApprovalWithdrawn))
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	pending := &gatingv1.GatePendingRequest{RequestedBy: "ana", RequestedAt: metav1.NewTime(requested)}
	for name, tc := range map[string]struct {
		status  *gatingv1.GateApprovalStatus
		created time.Time
		answers bool
		refused string
	}{
		"made after the request, it answers it": {
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalPending, Pending: pending}, created: now, answers: true,
		},
		"made within the clock skew before it, it still answers it": {
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalPending, Pending: pending}, created: requested.Add(-30 * time.Second), answers: true,
		},
		"made well before the request, it answers an earlier one": {
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalPending, Pending: pending}, created: requested.Add(-time.Hour),
			refused: "created before the open request of ana of 2026-03-02T09:00:00Z",
		},
		"nothing pending": {
			status: &gatingv1.GateApprovalStatus{}, created: now, refused: "no open request was pending approval",
		},
		"the request was decided": {
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalApproved, Pending: pending}, created: now,
			refused: "the open request of ana was already approved",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			request, refused := Answer(tc.status, tc.created, time.Minute)
			g.Expect(refused).To(Equal(tc.refused))
			if tc.answers {
				g.Expect(request).To(Equal(&pending.RequestedAt))
			} else {
				g.Expect(request).To(BeNil())
			}
		})
	}
}
