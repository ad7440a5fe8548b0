package response

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func TestPendingRevision(t *testing.T) {
	at := func(s string) metav1.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.NewTime(v)
	}
	request := func(when, revision string) map[string]string {
		return map[string]string{gatesapi.OpenRequestAnnotation: when, gatingv1.OpenRevisionAnnotation: revision}
	}
	pending := func(when, revision string, state gatingv1.GateApprovalState) *gatingv1.GateApprovalStatus {
		return &gatingv1.GateApprovalStatus{State: state, Pending: &gatingv1.GatePendingRequest{RequestedAt: at(when), Revision: revision}}
	}
	approval := &gatingv1.GateApprovalSpec{}
	for name, tc := range map[string]struct {
		annotations map[string]string
		spec        *gatingv1.GateApprovalSpec
		status      *gatingv1.GateApprovalStatus
		want        string
	}{
		"nothing requested":          {nil, approval, nil, ""},
		"pending":                    {request("2026-12-20T10:00:00Z", "r1"), approval, pending("2026-12-20T10:00:00Z", "r1", gatingv1.ApprovalPending), "r1"},
		"request not yet pending":    {request("2026-12-20T10:00:00Z", "r1"), approval, nil, "r1"},
		"newer request not yet seen": {request("2026-12-20T11:00:00Z", "r2"), approval, pending("2026-12-20T10:00:00Z", "r1", gatingv1.ApprovalPending), "r2"},
		"newer request of no revision": {map[string]string{gatesapi.OpenRequestAnnotation: "2026-12-20T11:00:00Z"}, approval,
			pending("2026-12-20T10:00:00Z", "r1", gatingv1.ApprovalPending), ""},
		"decided":                 {request("2026-12-20T10:00:00Z", "r1"), approval, pending("2026-12-20T10:00:00Z", "r1", gatingv1.ApprovalApproved), ""},
		"gate without approvals":  {request("2026-12-20T10:00:00Z", "r1"), nil, nil, ""},
		"unreadable request time": {request("yesterday", "r1"), approval, nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			gate := &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations},
				Spec: gatingv1.GateSpec{Approval: tc.spec}, Status: gatingv1.GateStatus{Approval: tc.status}}
			if got := PendingRevision(gate); got != tc.want {
				t.Fatalf("PendingRevision = %q, want %q", got, tc.want)
			}
		})
	}
}
