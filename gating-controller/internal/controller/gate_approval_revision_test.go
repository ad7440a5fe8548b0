package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// respondFor creates a GateApproval for a revision as user, as `kubectl gate approve --revision`.
func respondFor(t *testing.T, ns, gate, user, revision string, decision gatingv1.GateDecision) {
	t.Helper()
	g := NewWithT(t)
	c := as(t, user)
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(c.Create(context.Background(), review)).To(Succeed())
	ga := &gatingv1.GateApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: gate + "-"},
		Spec: gatingv1.GateApprovalResponseSpec{Gate: gate, Decision: decision, Revision: revision,
			User: review.Status.UserInfo.Username, Groups: review.Status.UserInfo.Groups},
	}
	g.Expect(c.Create(context.Background(), ga)).To(Succeed())
}

// An open request for a revision counts only the responses for that revision; once approved, the
// gate is opened for that revision only (status.openedForRevision).
func TestGateApprovalForARevision(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed, Window: duration("1h"),
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana", "bo"}}},
		}},
	})
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:00Z", gatingv1.OpenRequestedByAnnotation, "alice",
		gatingv1.OpenReasonAnnotation, "Ship 1.2", gatingv1.OpenRevisionAnnotation, "main@sha1:r1")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule sre (ana, bo); 0 of 1 in all"))
	g.Expect(getGate(g, ns, "release").Status.Approval.Pending.Revision).To(Equal("main@sha1:r1"))

	setClock("2021-03-26T10:05:00Z")
	respondFor(t, ns, "release", "ana", "main@sha1:n2", gatingv1.DecisionApprove)
	respondFor(t, ns, "release", "bo", "", gatingv1.DecisionApprove)
	g.Eventually(func(g Gomega) []gatingv1.GateResponse { return responsesOf(g, ns, "release") }, timeout).Should(ConsistOf(
		And(HaveField("User", "ana"), HaveField("Counted", false),
			HaveField("Refused", "the response is for revision 'main@sha1:n2'; the open request is for revision 'main@sha1:r1'")),
		And(HaveField("User", "bo"), HaveField("Counted", false),
			HaveField("Refused", "the response names no revision; the open request is for revision 'main@sha1:r1'")),
	))
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElement(
		"Warning ApprovalRefused: approval of ana refused: the response is for revision 'main@sha1:n2'; the open request is for revision 'main@sha1:r1'"))
	g.Consistently(openedCondition(ns, "release"), "1s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))
	g.Expect(getGate(g, ns, "release").Status.OpenedForRevision).To(BeEmpty())

	setClock("2021-03-26T10:10:00Z")
	respondFor(t, ns, "release", "bo", "main@sha1:r1", gatingv1.DecisionApprove)
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal(
		"True|ReconciliationSucceeded|Gate scheduled for closing at 2021-03-26T11:10:00Z"))
	st := getGate(g, ns, "release").Status
	g.Expect(st.OpenedForRevision).To(Equal("main@sha1:r1"))
	g.Expect(st.Approval.ApprovedRevision).To(Equal("main@sha1:r1"))
	g.Expect(st.Request.Revision).To(Equal("main@sha1:r1"))
	g.Expect(approvedCondition(ns, "release")(g)).To(Equal("True|Approved|revision 'main@sha1:r1' approved by bo"))
	g.Expect(st.Conditions).To(ContainElement(And(HaveField("Type", "Ready"), HaveField("Message",
		"Gate opened for revision 'main@sha1:r1' by the open request of alice, approved by bo, until 2021-03-26T11:10:00Z (for 1h0m0s)"))))
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElement(
		"Normal Approved: open request of alice for revision main@sha1:r1: approved by bo"))

	// The window ends: the gate closes, and is opened for no revision.
	setClock("2021-03-26T11:10:01Z")
	poke(t, gate)
	g.Eventually(openedCondition(ns, "release"), timeout).Should(HavePrefix("False|"))
	g.Expect(getGate(g, ns, "release").Status.OpenedForRevision).To(BeEmpty())
}
