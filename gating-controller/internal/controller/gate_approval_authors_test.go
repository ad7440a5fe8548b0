package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// gitRepositoryWithArtifact makes a GitRepository whose status is the artifact of revision, with
// the artifact metadata the source-controller writes for its commit's author.
func gitRepositoryWithArtifact(t *testing.T, ns, name, revision, author string) {
	t.Helper()
	g := NewWithT(t)
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	u.SetKind("GitRepository")
	u.SetNamespace(ns)
	u.SetName(name)
	g.Expect(unstructured.SetNestedField(u.Object, "https://git.example.com/app.git", "spec", "url")).To(Succeed())
	g.Expect(unstructured.SetNestedField(u.Object, "10m", "spec", "interval")).To(Succeed())
	g.Expect(k8s.Create(context.Background(), u)).To(Succeed())
	g.Expect(unstructured.SetNestedMap(u.Object, map[string]any{
		"path": "gitrepository/" + ns + "/" + name + "/r.tar.gz", "url": "http://source-controller/gitrepository/" + ns + "/" + name + "/r.tar.gz",
		"revision": revision, "digest": "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
		"lastUpdateTime": "2021-03-26T09:00:00Z", "metadata": map[string]any{"source.toolkit.fluxcd.io/author": author},
	}, "status", "artifact")).To(Succeed())
	g.Expect(k8s.Status().Update(context.Background(), u)).To(Succeed())
}

// Under preventSelfApproval, the author of the requested revision (as the GitRepository whose
// artifact is that revision names them) cannot approve it, whether their user name is their
// address alone or after an OIDC prefix; the author of another revision can.
func TestGateApprovalAuthorOfTheRevisionIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	gitRepositoryWithArtifact(t, ns, "app", "main@sha1:r1", `"Ana Lima" <Ana@example.com>`)
	gitRepositoryWithArtifact(t, ns, "older", "main@sha1:r0", `"Bo" <bo@example.com>`)
	gate := createGate(t, ns, "release", gatingv1.GateSpec{
		Default: gatingv1.GateClosed, Window: duration("1h"),
		Approval: &gatingv1.GateApprovalSpec{PreventSelfApproval: true, Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"oidc:ana@example.com", "ana@example.com", "bo@example.com"}}},
		}},
	})
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T10:00:00Z", gatingv1.OpenRequestedByAnnotation, "alice",
		gatingv1.OpenReasonAnnotation, "Ship 1.2", gatingv1.OpenRevisionAnnotation, "main@sha1:r1")
	g.Eventually(approvedCondition(ns, "release"), timeout).Should(HavePrefix("False|ApprovalPending|"))

	respondFor(t, ns, "release", "oidc:ana@example.com", "main@sha1:r1", gatingv1.DecisionApprove)
	respondFor(t, ns, "release", "ana@example.com", "main@sha1:r1", gatingv1.DecisionApprove)
	const refusedOIDC = "self-approval: oidc:ana@example.com authored revision 'main@sha1:r1' and spec.approval.preventSelfApproval is set"
	const refused = "self-approval: ana@example.com authored revision 'main@sha1:r1' and spec.approval.preventSelfApproval is set"
	g.Eventually(func(g Gomega) []gatingv1.GateResponse { return responsesOf(g, ns, "release") }, timeout).Should(ConsistOf(
		And(HaveField("User", "oidc:ana@example.com"), HaveField("Counted", false), HaveField("Refused", refusedOIDC)),
		And(HaveField("User", "ana@example.com"), HaveField("Counted", false), HaveField("Refused", refused)),
	))
	g.Eventually(eventsOf(ns, "release"), timeout).Should(ContainElements(
		"Warning ApprovalRefused: approval of oidc:ana@example.com refused: "+refusedOIDC,
		"Warning ApprovalRefused: approval of ana@example.com refused: "+refused))
	g.Expect(getGate(g, ns, "release").Status.Approval.Pending.Authors).To(Equal([]string{"ana@example.com"}))
	g.Consistently(openedCondition(ns, "release"), "1s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	// bo wrote the revision before: he may approve this one.
	respondFor(t, ns, "release", "bo@example.com", "main@sha1:r1", gatingv1.DecisionApprove)
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal(
		"True|ReconciliationSucceeded|Gate scheduled for closing at 2021-03-26T11:00:00Z"))
	g.Expect(getGate(g, ns, "release").Status.OpenedForRevision).To(Equal("main@sha1:r1"))
	g.Expect(approvedCondition(ns, "release")(g)).To(Equal("True|Approved|revision 'main@sha1:r1' approved by bo@example.com"))
}
