package controller

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

var installApprovalPolicy sync.Once

// approvalPolicy installs deploy/gating-controller/gateapproval-identity-policy.yaml, as
// deploy/default does, once for the package.
func approvalPolicy(t *testing.T) {
	t.Helper()
	var err error
	installApprovalPolicy.Do(func() {
		_, err = testenv.ApplyFile(context.Background(), k8s,
			filepath.Join(env.Root, "deploy", "gating-controller", "gateapproval-identity-policy.yaml"), "sluice-test")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// as is a client that acts as user (impersonated, with system:masters so RBAC lets it act).
func as(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:masters")}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// respond creates a GateApproval as user, with the identity the API server gives that user (a
// SelfSubjectReview), as `kubectl gate approve` does.
func respond(t *testing.T, ns, gate, user string, decision gatingv1.GateDecision, reason string, groups ...string) *gatingv1.GateApproval {
	t.Helper()
	g := NewWithT(t)
	c := as(t, user, groups...)
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(c.Create(context.Background(), review)).To(Succeed())
	ga := &gatingv1.GateApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: gate + "-"},
		Spec: gatingv1.GateApprovalResponseSpec{Gate: gate, Decision: decision, Reason: reason,
			User: review.Status.UserInfo.Username, Groups: review.Status.UserInfo.Groups},
	}
	g.Expect(c.Create(context.Background(), ga)).To(Succeed())
	return ga
}

// approvedCondition is the gate's Approved condition as "status|reason|message".
func approvedCondition(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		gate := getGate(g, ns, name)
		for _, c := range gate.Status.Conditions {
			if c.Type == ApprovedCondition {
				return string(c.Status) + "|" + c.Reason + "|" + c.Message
			}
		}
		return "no Approved condition"
	}
}

// requestOpen writes an open request as user would with `kubectl gate open`.
func requestOpen(t *testing.T, gate *gatingv1.Gate, at, user, reason string) {
	t.Helper()
	annotate(t, gate, gatesapi.OpenRequestAnnotation, at, gatingv1.OpenRequestedByAnnotation, user,
		gatingv1.OpenReasonAnnotation, reason)
}

func responsesOf(g Gomega, ns, name string) []gatingv1.GateResponse {
	st := getGate(g, ns, name).Status.Approval
	g.Expect(st).NotTo(BeNil())
	return st.Responses
}

// 2 approvals needed across two rules; ana fits both. She approves first, bo (sre only) second:
// the matching moves ana to security and the gate opens (a first-fit assignment would wait for
// cy for ever: see internal/approval).
func TestGateApprovalTwoRulesOneApproverFitsBoth(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed, Window: duration("1h"),
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana", "bo"}}},
			{Name: "security", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"cy"}, Groups: []string{"security"}}},
		}},
	})
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "Ship 1.2")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule sre (ana, bo) and 1 more approval from rule security (cy, group security); 0 of 2 in all"))
	g.Expect(openedCondition(ns, "release")(g)).To(Equal("False|ReconciliationSucceeded|Gate closed by default"))
	g.Expect(getGate(g, ns, "release").Status.Approval.Pending).To(And(
		HaveField("RequestedBy", "alice"), HaveField("Reason", "Ship 1.2"),
		HaveField("RequestedAt.Time", BeTemporally("==", time.Date(2021, 3, 26, 10, 0, 0, 0, time.UTC)))))
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElement(
		"Normal ApprovalPending: open request of alice: waiting for 1 more approval from rule sre (ana, bo) and 1 more approval from rule security (cy, group security); 0 of 2 in all"))

	setClock("2021-03-26T10:05:00Z")
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "looks good", "security")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule security (cy, group security); 1 of 2 in all"))
	g.Expect(getGate(g, ns, "release").Status.Conditions).To(ContainElement(And(
		HaveField("Type", "Ready"),
		HaveField("Message", "Gate closed by default; the open request of alice is pending approval: waiting for 1 more approval from rule security (cy, group security); 1 of 2 in all"))))

	setClock("2021-03-26T10:10:00Z")
	respond(t, ns, "release", "bo", gatingv1.DecisionApprove, "")
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal(
		"True|ReconciliationSucceeded|Gate scheduled for closing at 2021-03-26T11:10:00Z"))
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal("True|Approved|approved by ana, bo"))
	st := getGate(g, ns, "release").Status
	g.Expect(st.Approval.State).To(Equal(gatingv1.ApprovalApproved))
	g.Expect(st.Approval.Rules).To(Equal([]gatingv1.GateRuleProgress{
		{Name: "sre", Minimum: 1, ApprovedBy: []string{"bo"}},
		{Name: "security", Minimum: 1, ApprovedBy: []string{"ana"}},
	}))
	g.Expect(st.Approval.ApprovedBy).To(Equal([]string{"ana", "bo"}))
	g.Expect(st.History[0]).To(And(HaveField("Cause", "approval"), HaveField("Opened", true),
		HaveField("RequestedBy", "alice"), HaveField("Reason", "Ship 1.2"), HaveField("ApprovedBy", []string{"ana", "bo"})))
	g.Expect(st.Conditions).To(ContainElement(And(HaveField("Type", "Ready"), HaveField("Message",
		"Gate opened by the open request of alice, approved by ana, bo, until 2021-03-26T11:10:00Z (for 1h0m0s)"))))
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElements(
		"Normal Approved: open request of alice: approved by ana, bo",
		"Normal GateOpened: Gate scheduled for closing at 2021-03-26T11:10:00Z (approval, requested by alice, approved by ana, bo: Ship 1.2)"))
	g.Expect(responsesOf(g, ns, "release")).To(HaveExactElements(
		And(HaveField("User", "bo"), HaveField("Counted", true)),
		And(HaveField("User", "ana"), HaveField("Counted", true), HaveField("Reason", "looks good")),
	))

	// The responses go with the gate: the gating-controller made it their owner.
	list := &gatingv1.GateApprovalList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	for _, ga := range list.Items {
		g.Expect(ga.OwnerReferences).To(ContainElement(HaveField("Name", "release")))
	}
}

// The requester's own approval is refused and does not count.
func TestGateApprovalSelfApprovalIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{PreventSelfApproval: true, Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"alice", "bo"}}},
		}},
	})
	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "Ship 1.2")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))

	respond(t, ns, "release", "alice", gatingv1.DecisionApprove, "mine")
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElement(
		"Warning ApprovalRefused: approval of alice refused: self-approval: alice requested the opening and spec.approval.preventSelfApproval is set"))
	g.Eventually(func(g Gomega) []gatingv1.GateResponse { return responsesOf(g, ns, "release") }, timeout).Should(HaveExactElements(
		And(HaveField("User", "alice"), HaveField("Counted", false),
			HaveField("Refused", "self-approval: alice requested the opening and spec.approval.preventSelfApproval is set"))))
	g.Expect(approvedCondition(ns, "release")(g)).To(Equal("False|ApprovalPending|waiting for 1 more approval from rule sre (alice, bo); 0 of 1 in all"))
	g.Consistently(openedCondition(ns, "release"), "1s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	respond(t, ns, "release", "bo", gatingv1.DecisionApprove, "")
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by approval"))
	g.Expect(approvedCondition(ns, "release")(g)).To(Equal("True|Approved|approved by bo"))
}

// A rejection holds the gate closed; later approvals of that request do not count; a new open
// request starts a new approval.
func TestGateApprovalRejectionHolds(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed, Window: duration("1h"),
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana", "bo"}}},
		}},
	})
	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "Ship 1.2")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))

	setClock("2021-03-26T10:01:00Z")
	respond(t, ns, "release", "bo", gatingv1.DecisionReject, "not during the migration")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal("False|Rejected|rejected by bo: not during the migration"))
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElement(
		"Normal Rejected: open request of alice: rejected by bo: not during the migration"))
	g.Expect(getGate(g, ns, "release").Status.Conditions).To(ContainElement(And(HaveField("Type", "Ready"), HaveField("Message",
		"Gate closed by default; the open request of alice was rejected by bo: not during the migration"))))

	setClock("2021-03-26T10:02:00Z")
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(func(g Gomega) []gatingv1.GateResponse { return responsesOf(g, ns, "release") }, timeout).Should(HaveLen(2))
	g.Expect(responsesOf(g, ns, "release")[0]).To(And(HaveField("User", "ana"), HaveField("Counted", false),
		HaveField("Refused", "the open request of alice was already rejected")))
	g.Consistently(openedCondition(ns, "release"), "1s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	// A new open request: a new approval, to which ana's earlier approval does not count.
	setClock("2021-03-26T10:30:00Z")
	requestOpen(t, gate, "2021-03-26T10:30:00Z", "alice", "Ship 1.2, after the migration")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule sre (ana, bo); 0 of 1 in all"))
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal(
		"True|ReconciliationSucceeded|Gate scheduled for closing at 2021-03-26T11:30:00Z"))

	// A close request still closes it.
	setClock("2021-03-26T10:40:00Z")
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T10:40:00Z")
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate close requested"))
}

// A response created before the pending request (here: the request is dated later than the API
// server's clock) answers an earlier one and does not count.
func TestGateApprovalCreatedBeforeTheRequestDoesNotCount(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2099-01-01T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana"}}},
		}},
	})
	requestOpen(t, gate, "2099-01-01T10:00:00Z", "alice", "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(func(g Gomega) []gatingv1.GateResponse { return responsesOf(g, ns, "release") }, timeout).Should(HaveExactElements(
		And(HaveField("User", "ana"), HaveField("Counted", false),
			HaveField("Refused", "created before the open request of alice of 2099-01-01T10:00:00Z"))))
	g.Expect(approvedCondition(ns, "release")(g)).To(Equal("False|ApprovalPending|waiting for 1 more approval from rule sre (ana); 0 of 1 in all"))
}

// An approval older than spec.approval.expiry no longer counts.
func TestGateApprovalExpires(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{Expiry: duration("1h"), Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 2, Approvers: gatingv1.GateApprovers{Users: []string{"ana", "bo"}}},
		}},
	})
	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule sre (ana, bo); 1 of 2 in all"))

	setClock("2021-03-26T11:00:01Z")
	poke(t, gate)
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 2 more approvals from rule sre (ana, bo); 0 of 2 in all"))
	g.Expect(responsesOf(g, ns, "release")[0]).To(And(HaveField("User", "ana"), HaveField("Counted", false),
		HaveField("Refused", "expired at 2021-03-26T11:00:00Z (spec.approval.expiry 1h0m0s)")))

	respond(t, ns, "release", "bo", gatingv1.DecisionApprove, "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule sre (ana, bo); 1 of 2 in all"))
	g.Expect(openedCondition(ns, "release")(g)).To(Equal("False|ReconciliationSucceeded|Gate closed by default"))
}

// A freeze wins over approvals: an approved request does not open a gate a keeper holds closed.
func TestGateApprovalDoesNotOverrideAClosingKeeper(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana"}}},
		}},
	})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{Gate: "release", TimeZone: "UTC",
		Periods: []gatingv1.Period{{Name: "Release freeze", Start: "2021-03-26", End: "2021-03-28"}}})
	const frozen = "False|ReconciliationSucceeded|Gate scheduled for opening at 2021-03-28T00:00:00Z"
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal(frozen))
	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal("True|Approved|approved by ana"))
	g.Consistently(openedCondition(ns, "release"), "1s").Should(Equal(frozen))
	g.Expect(getGate(g, ns, "release").Status.History[0].Opened).To(BeFalse())
}

// The API server takes a GateApproval only in its caller's name, and never changes one.
func TestGateApprovalIdentityPolicy(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	approvalPolicy(t)
	forged := func() error {
		return as(t, "eve").Create(context.Background(), &gatingv1.GateApproval{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "release-"},
			Spec:       gatingv1.GateApprovalResponseSpec{Gate: "release", Decision: gatingv1.DecisionApprove, User: "ana"},
		})
	}
	g.Eventually(forged, timeout).Should(MatchError(ContainSubstring(
		"spec.user must be 'eve', the user creating this GateApproval, but it is 'ana'")))

	badGroups := as(t, "eve").Create(context.Background(), &gatingv1.GateApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "release-"},
		Spec: gatingv1.GateApprovalResponseSpec{Gate: "release", Decision: gatingv1.DecisionApprove, User: "eve",
			Groups: []string{"sre"}},
	})
	g.Expect(badGroups).To(MatchError(ContainSubstring("spec.groups must be the groups of 'eve'")))

	ga := respond(t, ns, "release", "eve", gatingv1.DecisionApprove, "fine")
	changed := ga.DeepCopy()
	changed.Spec.User = "ana"
	g.Expect(as(t, "eve").Update(context.Background(), changed)).To(MatchError(ContainSubstring("cannot be changed")))
	changed = ga.DeepCopy()
	changed.Spec.Reason = "changed my mind"
	g.Expect(as(t, "eve").Update(context.Background(), changed)).To(MatchError(ContainSubstring(
		"a GateApproval cannot be changed: create a new one")))
}

// The approval events reach the GateNotifications that forward them.
func TestGateApprovalEventsAreNotified(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	hook := newWebhook(t)
	createNotification(t, ns, "approvals", hook.URL+"/in", "", gatingv1.GateNotificationSpec{
		Type: gatingv1.NotificationGeneric, Gates: []string{"release"},
		Events: []gatingv1.GateEventType{gatingv1.GateEventApprovalPending, gatingv1.GateEventApproved, gatingv1.GateEventRejected},
	})
	g.Eventually(notificationReady(ns, "approvals"), timeout).Should(HavePrefix("True|"))
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana"}}},
		}},
	})
	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "Ship 1.2")
	g.Eventually(hook.requests, timeout).Should(HaveLen(1))
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(hook.requests, timeout).Should(HaveLen(2))
	var events []map[string]any
	for _, r := range hook.requests() {
		var p map[string]any
		g.Expect(json.Unmarshal(r.body, &p)).To(Succeed())
		events = append(events, p)
	}
	g.Expect(events[0]).To(And(HaveKeyWithValue("event", "ApprovalPending"), HaveKeyWithValue("state", "closed"),
		HaveKeyWithValue("cause", "approval"), HaveKeyWithValue("requestedBy", "alice"), HaveKeyWithValue("reason", "Ship 1.2"),
		HaveKeyWithValue("message", "open request of alice: waiting for 1 more approval from rule sre (ana); 0 of 1 in all")))
	g.Expect(events[1]).To(And(HaveKeyWithValue("event", "Approved"), HaveKeyWithValue("state", "opened"),
		HaveKeyWithValue("message", "open request of alice: approved by ana")))
}

// A close request later than the pending open request withdraws it: approvals no longer open
// the gate.
func TestGateApprovalCloseRequestWithdrawsThePendingRequest(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana"}}},
		}},
	})
	requestOpen(t, gate, "2021-03-26T10:00:00Z", "alice", "")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))
	setClock("2021-03-26T10:05:00Z")
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T10:05:00Z")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(Equal("False|Withdrawn|withdrawn by a later close request"))
	respond(t, ns, "release", "ana", gatingv1.DecisionApprove, "")
	g.Eventually(func(g Gomega) []gatingv1.GateResponse { return responsesOf(g, ns, "release") }, timeout).Should(HaveExactElements(
		And(HaveField("User", "ana"), HaveField("Counted", false), HaveField("Refused", "the open request of alice was already withdrawn"))))
	g.Consistently(openedCondition(ns, "release"), "1s").Should(Equal("False|ReconciliationSucceeded|Gate close requested"))
}
