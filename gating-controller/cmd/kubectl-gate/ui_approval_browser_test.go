package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/browsertest"
)

// pendingApproval is the status the gating-controller gives a gate whose open request waits for
// approvals.
func pendingApproval() gatingv1alpha1.GateStatus {
	return gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(false, "Gate closed by default"),
			readyCondition("Gate closed by default; the open request of alice is pending approval: waiting for 1 more approval from rule sre (ana, bo) and 1 more approval from rule security (group security); 0 of 2 in all"),
			{Type: "Approved", Status: metav1.ConditionFalse, Reason: "ApprovalPending", LastTransitionTime: metav1.Now(),
				Message: "waiting for 1 more approval from rule sre (ana, bo) and 1 more approval from rule security (group security); 0 of 2 in all"},
		},
		Approval: &gatingv1alpha1.GateApprovalStatus{
			State: gatingv1alpha1.ApprovalPending,
			Pending: &gatingv1alpha1.GatePendingRequest{RequestedBy: "alice", RequestedAt: *at("2026-12-20T10:00:00Z"),
				Reason: "Ship 1.2", Revision: "main@sha1:4f2c9e1", Authors: []string{"cy@example.com"}},
			Rules: []gatingv1alpha1.GateRuleProgress{{Name: "sre", Minimum: 1}, {Name: "security", Minimum: 1}},
		},
	}
}

// An approver approves from the page, in their own name; a viewer without the right to create
// GateApprovals sees the approval read-only, and the API server's refusal if they try anyway.
func TestUIApprovesAsTheUserRunningIt(t *testing.T) {
	g := NewWithT(t)
	ctx := browsertest.New(t, 1280, 1024)
	ns := env.Namespace(t)
	installApprovalPolicy(t)
	gate := approvalGate(t, ns, "release")
	setStatus(t, gate, pendingApproval())
	id := ns + "/release"
	card := func() (string, error) { return cardText(ctx, ns, "release") }

	url := startUI(t, "-n", ns, "--as", "ana", "--as-group", "system:masters")
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url))).To(Succeed())
	g.Eventually(card).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring("Approval\nState\nPending\nRequest\nopen requested at 2026-12-20T10:00:00Z by alice: \"Ship 1.2\"\nRevision\nmain@sha1:4f2c9e1\nAuthors of the revision\ncy@example.com"),
		ContainSubstring("Progress\nwaiting for 1 more approval from rule sre (ana, bo) and 1 more approval from rule security (group security); 0 of 2 in all"),
		ContainSubstring("Required\n2 in all"),
		ContainSubstring("sre\tana, bo\t0/1\t-"),
		ContainSubstring("security\tgroup security\t0/1\t-"),
		ContainSubstring("Approve"),
	))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const card = document.querySelector('article[data-gate="%s"]');
		const input = card.querySelector("input.reason");
		input.value = "Tested on staging";
		input.dispatchEvent(new Event("input"));
		card.querySelector("button.approve").click();
		return true;
	})()`, id)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(card).WithTimeout(30 * time.Second).Should(MatchRegexp(`Approved as ana \(GateApproval release-[a-z0-9]+\)\.`))
	list := &gatingv1alpha1.GateApprovalList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveExactElements(HaveField("Spec", gatingv1alpha1.GateApprovalResponseSpec{
		Gate: "release", Decision: "approve", Reason: "Tested on staging", Revision: "main@sha1:4f2c9e1",
		User: "ana", Groups: []string{"system:masters", "system:authenticated"}})))

	// A viewer: may read gates, may not respond.
	viewer := "viewer-" + ns
	g.Expect(env.Client.Create(context.Background(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-viewer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"gating.toolkit.fluxcd.io"},
			Resources: []string{"gates", "gatekeepers"}, Verbs: []string{"get", "list"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gate-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: viewer}},
	})).To(Succeed())
	url = startUI(t, "-n", ns, "--as", viewer)
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url))).To(Succeed())
	g.Eventually(card).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring("Approval\nState\nPending"),
		ContainSubstring("read-only: your RBAC does not let you create gateapprovals in "+ns),
	))
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`document.querySelector('article[data-gate="%s"] button') !== null`, id)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(buttons).To(BeFalse(), "a viewer without create on gateapprovals got Approve/Reject buttons")

	// Trying anyway (the page's own request, by hand): the API server's refusal, word for word.
	refusal, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch("api/gates/%s/approve", {
		method: "POST", headers: {"Content-Type": "application/json", "X-Sluice-Dashboard": "1"},
		body: JSON.stringify({reason: "me too"})}).then(async (r) => r.status + " " + (await r.text()).trim())`, id),
		chromedp.EvalAwaitPromise))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(Equal(`403 gateapprovals.gating.toolkit.fluxcd.io is forbidden: User "` + viewer +
		`" cannot create resource "gateapprovals" in API group "gating.toolkit.fluxcd.io" in the namespace "` + ns + `"`))
}

// The page shows a gate's promotion chain (the revision it is opened for, what was promoted,
// what soaks and until when) and a deletion set waiting on its approvers, which an approver
// approves from the page: the GateApproval is for the set's digest.
func TestUIShowsPromotionAndApprovesADeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := browsertest.New(t, 1280, 1024)
	ns := env.Namespace(t)
	installApprovalPolicy(t)
	digest := "sha256:b413305212baf25ef91f8b31c29b585ce8189d4d16f3bbd401a98989231805d2"
	gate := createGate(t, ns, "production", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed,
		Promotion: &gatingv1alpha1.GatePromotion{From: []gatingv1alpha1.GateObjectReference{
			{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Name: "staging", Namespace: "staging"}}},
		Approval: &gatingv1alpha1.GateApprovalSpec{Rules: []gatingv1alpha1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1alpha1.GateApprovers{Users: []string{"ana"}}}}},
	})
	status := pendingApproval()
	status.Approval.Pending = &gatingv1alpha1.GatePendingRequest{RequestedBy: "system:serviceaccount:" + ns + ":applier",
		RequestedAt: *at("2026-12-20T10:00:00Z"), Reason: "ResourceSet " + ns + "/fleet would delete 2 objects", Revision: digest}
	status.OpenedForRevision = "main@sha1:r1"
	status.Promotion = &gatingv1alpha1.GatePromotionStatus{Revision: "main@sha1:r1", PromotedAt: at("2026-12-20T09:00:00Z"),
		Candidate: "main@sha1:r2", SoakingSince: at("2026-12-20T09:30:00Z"), OpensAt: at("2026-12-20T10:00:00Z"),
		Message: "revision 'main@sha1:r2' soaking since 2026-12-20T09:30:00Z in ManifestGeneration staging/staging"}
	setStatus(t, gate, status)
	rset := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSet",
		"metadata": map[string]any{"namespace": ns, "name": "fleet"},
		"spec":     map[string]any{"resources": []any{}},
	}}
	g.Expect(env.Client.Create(context.Background(), rset)).To(Succeed())
	rset.Object["status"] = map[string]any{"pendingDeletion": map[string]any{"digest": digest, "count": int64(2), "gate": "production",
		"state": "Pending", "objects": []any{ns + "_cluster-2__ConfigMap", ns + "_cluster-3__ConfigMap"},
		"message": "the deletion of 2 objects waits for approval on gate 'production'"}}
	g.Expect(env.Client.Status().Update(context.Background(), rset)).To(Succeed())

	url := startUI(t, "-n", ns, "--as", "ana", "--as-group", "system:masters")
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url))).To(Succeed())
	card := func() (string, error) { return cardText(ctx, ns, "production") }
	g.Eventually(card).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring("Promotion\nOpened for revision\nmain@sha1:r1\nFrom\nManifestGeneration staging/staging\nPromoted\nmain@sha1:r1 at 2026-12-20T09:00:00Z\n"+
			"Candidate\nmain@sha1:r2, soaking since 2026-12-20T09:30:00Z, promoted at 2026-12-20T10:00:00Z\n"+
			"Waits for\nrevision 'main@sha1:r2' soaking since 2026-12-20T09:30:00Z in ManifestGeneration staging/staging"),
		ContainSubstring("Deletions awaiting approval\nObject\nResourceSet "+ns+"/fleet\nState\nPending\nDeletes\n2 objects\nDigest\n"+digest),
		ContainSubstring(ns+"_cluster-2__ConfigMap\n"+ns+"_cluster-3__ConfigMap"),
		ContainSubstring("Approve deletion"),
	))
	browsertest.Screenshot(t, ctx, "kubectl-gate-ui.png")
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		document.querySelector('article[data-gate="%s/production"] section.deletions button.approve').click();
		return true;
	})()`, ns)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(card).WithTimeout(30 * time.Second).Should(MatchRegexp(`Approved as ana \(GateApproval production-[a-z0-9]+\)\.`))
	list := &gatingv1alpha1.GateApprovalList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveExactElements(HaveField("Spec", And(HaveField("Decision", gatingv1alpha1.DecisionApprove),
		HaveField("Revision", digest), HaveField("User", "ana")))))
}
