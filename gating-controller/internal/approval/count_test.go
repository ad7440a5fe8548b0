package approval

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

var (
	requested = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	// now is when Count runs: ten minutes after the request.
	now = requested.Add(10 * time.Minute)
)

// response is a response to the pending request of requested, made after minutes.
func response(name, user string, decision gatingv1.GateDecision, minutes int) gatingv1.GateResponse {
	at := metav1.NewTime(requested)
	return gatingv1.GateResponse{Name: name, User: user, Decision: decision, Request: &at,
		Time: metav1.NewTime(requested.Add(time.Duration(minutes) * time.Minute))}
}

func approve(name, user string, minutes int) gatingv1.GateResponse {
	return response(name, user, gatingv1.DecisionApprove, minutes)
}

// newestFirst orders responses as status.approval.responses does.
func newestFirst(rs ...gatingv1.GateResponse) []gatingv1.GateResponse {
	out := make([]gatingv1.GateResponse, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r
	}
	return out
}

func TestCount(t *testing.T) {
	sre := gatingv1.GateApprovalRule{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana"}, Groups: []string{"sre"}}}
	dev := gatingv1.GateApprovalRule{Name: "dev", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"bo", "cy"}}}
	hour := &metav1.Duration{Duration: time.Hour}
	for name, tc := range map[string]struct {
		spec      gatingv1.GateApprovalSpec
		pending   gatingv1.GatePendingRequest // RequestedAt is requested
		responses []gatingv1.GateResponse     // oldest first
		groups    map[string][]string         // of each response's GateApproval, by name
		deleted   string                      // a response whose GateApproval is gone
		state     gatingv1.GateApprovalState
		approved  bool
		// refused is each response's refusal (oldest first), "" when it counts.
		refused    []string
		approvedBy []string
		rules      [][]string
		next       *time.Time
	}{
		"one approval is enough without rules": {
			responses: []gatingv1.GateResponse{approve("a", "zed", 1)},
			state:     gatingv1.ApprovalApproved, approved: true, refused: []string{""}, approvedBy: []string{"zed"},
		},
		"each rule needs its approver": {
			spec:      gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{sre, dev}},
			responses: []gatingv1.GateResponse{approve("a", "bo", 1), approve("b", "cy", 2)},
			state:     gatingv1.ApprovalPending, refused: []string{"", ""}, approvedBy: []string{"bo", "cy"},
			rules: [][]string{nil, {"bo"}},
		},
		"a group counts for its rule": {
			spec:      gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{sre, dev}},
			responses: []gatingv1.GateResponse{approve("a", "bo", 1), approve("b", "dee", 2)},
			groups:    map[string][]string{"b": {"sre"}},
			state:     gatingv1.ApprovalApproved, approved: true, refused: []string{"", ""}, approvedBy: []string{"bo", "dee"},
			rules: [][]string{{"dee"}, {"bo"}},
		},
		"an approver of no rule is refused": {
			spec:      gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{dev}},
			responses: []gatingv1.GateResponse{approve("a", "eve", 1)},
			state:     gatingv1.ApprovalPending, refused: []string{"not an approver of any rule of spec.approval"},
			rules: [][]string{nil},
		},
		"a second approval counts once": {
			spec:      gatingv1.GateApprovalSpec{Required: new(int32(2))},
			responses: []gatingv1.GateResponse{approve("a", "bo", 1), approve("b", "bo", 2)},
			state:     gatingv1.ApprovalPending, refused: []string{"", "a second approval of bo counts once"}, approvedBy: []string{"bo"},
		},
		"the requester may not approve": {
			spec:      gatingv1.GateApprovalSpec{PreventSelfApproval: true},
			pending:   gatingv1.GatePendingRequest{RequestedBy: "bo"},
			responses: []gatingv1.GateResponse{approve("a", "bo", 1)},
			state:     gatingv1.ApprovalPending,
			refused:   []string{"self-approval: bo requested the opening and spec.approval.preventSelfApproval is set"},
		},
		"an author of the revision may not approve, by any OIDC prefix": {
			spec:    gatingv1.GateApprovalSpec{PreventSelfApproval: true},
			pending: gatingv1.GatePendingRequest{Revision: "main@sha1:abc", Authors: []string{"bo@example.com"}},
			responses: []gatingv1.GateResponse{
				withRevision(approve("a", "oidc:Bo@example.com", 1), "main@sha1:abc"),
				withRevision(approve("b", "cy@example.com", 2), "main@sha1:abc"),
			},
			state: gatingv1.ApprovalApproved, approved: true, approvedBy: []string{"cy@example.com"},
			refused: []string{"self-approval: oidc:Bo@example.com authored revision 'main@sha1:abc' and spec.approval.preventSelfApproval is set", ""},
		},
		"a response for another revision is refused": {
			pending: gatingv1.GatePendingRequest{Revision: "main@sha1:abc"},
			responses: []gatingv1.GateResponse{
				approve("a", "bo", 1), withRevision(approve("b", "cy", 2), "main@sha1:old"),
			},
			state: gatingv1.ApprovalPending,
			refused: []string{
				"the response names no revision; the open request is for revision 'main@sha1:abc'",
				"the response is for revision 'main@sha1:old'; the open request is for revision 'main@sha1:abc'",
			},
		},
		"an expired approval is refused, the next expiry is returned": {
			spec:      gatingv1.GateApprovalSpec{Required: new(int32(3)), Expiry: &metav1.Duration{Duration: 5 * time.Minute}},
			responses: []gatingv1.GateResponse{approve("a", "bo", 1), approve("b", "cy", 6), approve("c", "dee", 7)},
			state:     gatingv1.ApprovalPending, approvedBy: []string{"cy", "dee"},
			refused: []string{"expired at 2026-03-02T09:06:00Z (spec.approval.expiry 5m0s)", "", ""},
			next:    new(requested.Add(11 * time.Minute)),
		},
		"a rejection rejects, and the approvals before it no longer count": {
			spec:      gatingv1.GateApprovalSpec{Expiry: hour, Required: new(int32(2))},
			responses: []gatingv1.GateResponse{approve("a", "bo", 1), response("b", "cy", gatingv1.DecisionReject, 2)},
			state:     gatingv1.ApprovalRejected,
			refused:   []string{"the request was rejected by cy", ""},
		},
		"a response whose GateApproval was deleted is refused": {
			responses: []gatingv1.GateResponse{approve("gone", "bo", 1)},
			deleted:   "gone",
			state:     gatingv1.ApprovalPending, refused: []string{"the GateApproval was deleted"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pending := tc.pending
			pending.RequestedAt = metav1.NewTime(requested)
			a := &gatingv1.GateApprovalStatus{Pending: &pending, State: gatingv1.ApprovalPending, Responses: newestFirst(tc.responses...)}
			responders := map[string]*Responder{}
			for _, e := range tc.responses {
				if e.Name != tc.deleted {
					responders[e.Name] = &Responder{Groups: tc.groups[e.Name]}
				}
			}
			got := Count(&tc.spec, a, responders, now)

			g.Expect(a.State).To(Equal(tc.state))
			g.Expect(got.Approved).To(Equal(tc.approved))
			g.Expect(got.Next).To(Equal(tc.next))
			var refused []string
			for i := len(a.Responses) - 1; i >= 0; i-- {
				refused = append(refused, a.Responses[i].Refused)
				g.Expect(a.Responses[i].Counted).To(Equal(a.Responses[i].Refused == ""), "response %s", a.Responses[i].Name)
			}
			g.Expect(refused).To(Equal(tc.refused))
			g.Expect(a.ApprovedBy).To(Equal(tc.approvedBy))
			if tc.approved {
				g.Expect(a.ApprovedRevision).To(Equal(pending.Revision))
			}
			var rules [][]string
			for _, r := range a.Rules {
				rules = append(rules, r.ApprovedBy)
			}
			g.Expect(rules).To(Equal(tc.rules))
		})
	}
}

func withRevision(r gatingv1.GateResponse, revision string) gatingv1.GateResponse {
	r.Revision = revision
	return r
}

// A response to an earlier request is not of the round: Count leaves it as recorded.
func TestCountOnlyTheRound(t *testing.T) {
	g := NewWithT(t)
	earlier := metav1.NewTime(requested.Add(-time.Hour))
	old := gatingv1.GateResponse{Name: "old", User: "bo", Decision: gatingv1.DecisionReject, Request: &earlier, Counted: true}
	a := &gatingv1.GateApprovalStatus{
		Pending: &gatingv1.GatePendingRequest{RequestedAt: metav1.NewTime(requested)}, State: gatingv1.ApprovalPending,
		Responses: []gatingv1.GateResponse{approve("new", "cy", 1), old},
	}
	got := Count(&gatingv1.GateApprovalSpec{}, a, map[string]*Responder{"new": {}, "old": {}}, now)
	g.Expect(got.Approved).To(BeTrue())
	g.Expect(a.Responses[1]).To(Equal(old))
}
