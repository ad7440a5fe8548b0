package approval

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func TestNote(t *testing.T) {
	spec := &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
		{Name: "sre", Minimum: 2, Approvers: gatingv1.GateApprovers{Users: []string{"ana", "bo"}, Groups: []string{"oncall"}}},
		{Name: "dev", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"cy"}}},
	}}
	at := metav1.NewTime(requested)
	pending := &gatingv1.GatePendingRequest{RequestedBy: "dee", RequestedAt: at, Revision: "main@sha1:abc"}
	for name, tc := range map[string]struct {
		spec   *gatingv1.GateApprovalSpec
		status *gatingv1.GateApprovalStatus
		note   string
	}{
		"what each rule still needs": {
			spec: spec,
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalPending, Pending: pending, ApprovedBy: []string{"ana"},
				Rules: []gatingv1.GateRuleProgress{{Name: "sre", ApprovedBy: []string{"ana"}}, {Name: "dev"}}},
			note: "; the open request of dee for revision main@sha1:abc is pending approval: waiting for 1 more approval from rule sre (ana, bo, group oncall) and 1 more approval from rule dev (cy); 1 of 3 in all",
		},
		"what the total still needs, the rules met": {
			spec: &gatingv1.GateApprovalSpec{Required: new(int32(3))},
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalPending, Pending: &gatingv1.GatePendingRequest{RequestedAt: at},
				ApprovedBy: []string{"ana"}},
			note: "; the open request is pending approval: waiting for 2 more approvals; 1 of 3 in all",
		},
		"who rejected, and why": {
			spec: spec,
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalRejected, Pending: pending, Responses: []gatingv1.GateResponse{
				{Name: "r", User: "cy", Decision: gatingv1.DecisionReject, Reason: "not on a Friday", Request: &at, Counted: true},
			}},
			note: "; the open request of dee for revision main@sha1:abc was rejected by cy: not on a Friday",
		},
		"nothing once approved": {
			spec: spec, status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalApproved, Pending: pending},
		},
		"nothing without spec.approval": {
			status: &gatingv1.GateApprovalStatus{State: gatingv1.ApprovalPending, Pending: pending},
		},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Note(tc.spec, tc.status)).To(Equal(tc.note))
		})
	}
}
