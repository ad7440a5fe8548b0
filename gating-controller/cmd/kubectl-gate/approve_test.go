package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func approvalGate(t *testing.T, ns, name string) *gatingv1alpha1.Gate {
	t.Helper()
	return createGate(t, ns, name, gatingv1alpha1.GateSpec{
		Default: gatingv1alpha1.GateClosed,
		Approval: &gatingv1alpha1.GateApprovalSpec{PreventSelfApproval: true, Rules: []gatingv1alpha1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1alpha1.GateApprovers{Users: []string{"ana", "bo"}}},
			{Name: "security", Minimum: 1, Approvers: gatingv1alpha1.GateApprovers{Groups: []string{"security"}}},
		}},
	})
}

// installApprovalPolicy installs the gateapproval-identity policy of deploy/, so the plugin's
// GateApprovals are shown to pass it.
func installApprovalPolicy(t *testing.T) {
	t.Helper()
	_, err := testenv.ApplyFile(context.Background(), env.Client,
		filepath.Join(env.Root, "deploy", "gating-controller", "gateapproval-identity-policy.yaml"), "sluice-test")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

// `kubectl gate approve` and `reject` create a GateApproval in the caller's own name.
func TestApproveAndRejectCreateAGateApproval(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	installApprovalPolicy(t)
	approvalGate(t, ns, "release")

	var res result
	g.Eventually(func() int {
		res = kubectlGate(t, "approve", "release", "Tested on staging", "--revision", "main@sha1:4f2c9e1",
			"--as", "ana", "--as-group", "security", "--as-group", "system:masters", "-n", ns)
		return res.exitCode
	}, 20*time.Second).Should(Equal(0))
	g.Expect(res.stdout).To(MatchRegexp(`^gate ` + ns + `/release: approved by ana for revision main@sha1:4f2c9e1 \(GateApproval release-[a-z0-9]+\): "Tested on staging"\n$`))

	res = kubectlGate(t, "reject", "release", "not during the migration", "--as", "bo", "--as-group", "system:masters", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(MatchRegexp(`^gate ` + ns + `/release: rejected by bo \(GateApproval release-[a-z0-9]+\): "not during the migration"\n$`))

	list := &gatingv1alpha1.GateApprovalList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(ConsistOf(
		HaveField("Spec", gatingv1alpha1.GateApprovalResponseSpec{Gate: "release", Decision: "approve", Reason: "Tested on staging",
			Revision: "main@sha1:4f2c9e1", User: "ana", Groups: []string{"security", "system:masters", "system:authenticated"}}),
		HaveField("Spec", gatingv1alpha1.GateApprovalResponseSpec{Gate: "release", Decision: "reject", Reason: "not during the migration",
			User: "bo", Groups: []string{"system:masters", "system:authenticated"}}),
	))

	createGate(t, ns, "plain", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed})
	res = kubectlGate(t, "approve", "plain", "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stderr).To(Equal("error: gate " + ns + "/plain has no spec.approval: nothing waits for approvals (use kubectl gate open)\n"))
}

// `kubectl gate status NAME` shows the pending request, the rules' progress and the responses.
func TestStatusShowsTheApproval(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := approvalGate(t, ns, "release")
	setStatus(t, gate, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(false, "Gate closed by default"),
			{Type: "Approved", Status: metav1.ConditionFalse, Reason: "ApprovalPending", LastTransitionTime: metav1.Now(),
				Message: "waiting for 1 more approval from rule security (group security); 1 of 2 in all"},
		},
		Approval: &gatingv1alpha1.GateApprovalStatus{
			State: gatingv1alpha1.ApprovalPending,
			Pending: &gatingv1alpha1.GatePendingRequest{RequestedBy: "alice", RequestedAt: *at("2026-12-20T10:00:00Z"),
				Reason: "Ship 1.2", Revision: "main@sha1:4f2c9e1", Authors: []string{"cy@example.com"}},
			Rules: []gatingv1alpha1.GateRuleProgress{
				{Name: "sre", Minimum: 1, ApprovedBy: []string{"bo"}},
				{Name: "security", Minimum: 1},
			},
			ApprovedBy: []string{"bo"},
			Responses: []gatingv1alpha1.GateResponse{
				{Name: "release-b", User: "bo", Decision: "approve", Time: *at("2026-12-20T10:06:00Z"), Counted: true, Reason: "ok"},
				{Name: "release-a", User: "alice", Decision: "approve", Time: *at("2026-12-20T10:05:00Z"),
					Refused: "self-approval: alice requested the opening and spec.approval.preventSelfApproval is set"},
			},
		},
	})
	res := kubectlGate(t, "status", "release", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring(`Approval:             Pending
Pending request:      open requested at 2026-12-20T10:00:00Z by alice for revision main@sha1:4f2c9e1: "Ship 1.2"
Revision authors:     cy@example.com
Approval message:     waiting for 1 more approval from rule security (group security); 1 of 2 in all
Approved by:          bo
Rules:
  RULE       APPROVALS   APPROVED-BY
  sre        1/1         bo
  security   0/1         -
Responses:
  TIME                   USER    DECISION   COUNTED                                                                                       REASON
  2026-12-20T10:06:00Z   bo      approve    yes                                                                                           ok
  2026-12-20T10:05:00Z   alice   approve    no: self-approval: alice requested the opening and spec.approval.preventSelfApproval is set   -
Waiting:              -
`))
}
