package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// stage is a ManifestGeneration of staging whose status the test writes, as the
// manifest-generator would: the revision applied, its Ready condition, its history.
type stage struct {
	t   *testing.T
	obj *unstructured.Unstructured
}

func newStage(t *testing.T, ns, name string) *stage {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "generator.toolkit.fluxcd.io/v1alpha1", "kind": "ManifestGeneration",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "app"}, "path": "./staging", "interval": "1m"},
	}}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return &stage{t: t, obj: obj}
}

// applied writes that the stage applied revision at appliedAt, Ready (status) since readySince.
func (s *stage) applied(revision, appliedAt, ready, readySince string) {
	s.t.Helper()
	g := NewWithT(s.t)
	history := []any{map[string]any{"digest": revision, "firstReconciled": appliedAt, "lastReconciled": appliedAt,
		"lastReconciledDuration": "1s", "lastReconciledStatus": "ReconciliationSucceeded", "totalReconciliations": int64(1)}}
	if old, ok, _ := unstructured.NestedSlice(s.obj.Object, "status", "history"); ok && len(old) > 0 &&
		old[0].(map[string]any)["digest"] == revision {
		history = old // the same revision: its snapshot keeps its first time
	}
	reason := "ReconciliationSucceeded"
	if ready != "True" {
		reason = "HealthCheckFailed"
	}
	s.obj.Object["status"] = map[string]any{
		"observedGeneration":  s.obj.GetGeneration(),
		"lastAppliedRevision": revision,
		"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": reason,
			"message": "Applied revision: " + revision, "lastTransitionTime": readySince, "observedGeneration": s.obj.GetGeneration()}},
		"history": history,
	}
	g.Expect(k8s.Status().Update(context.Background(), s.obj)).To(Succeed())
}

func promotionOf(ns, name string) func(g Gomega) gatingv1.GatePromotionStatus {
	return func(g Gomega) gatingv1.GatePromotionStatus {
		st := getGate(g, ns, name).Status.Promotion
		g.Expect(st).NotTo(BeNil())
		return *st
	}
}

// instant matches the instant of an RFC 3339 time.
func instant(s string) OmegaMatcher {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return BeTemporally("==", t)
}

// A revision is promoted once it has soaked: applied and Ready in staging for spec.promotion.soak,
// read from staging's status. A failure during the soak starts it again. The gate opens for that
// revision only; a newer staging revision does not open production for itself, and is promoted
// once it has soaked in turn.
func TestGatePromotionSoak(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:10Z")
	staging := newStage(t, ns, "staging")
	staging.applied("main@sha1:r1", "2021-03-26T10:00:00Z", "True", "2021-03-26T09:59:50Z")
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateClosed, Interval: duration("1s"),
		Promotion: &gatingv1.GatePromotion{Soak: duration("30s"), From: []gatingv1.GateObjectReference{
			{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Name: "staging"}}}})

	g.Eventually(promotionOf(ns, "production"), timeout).Should(And(
		HaveField("Candidate", "main@sha1:r1"), HaveField("Revision", ""), HaveField("PromotedAt", BeNil()),
		HaveField("SoakingSince.Time", instant("2021-03-26T10:00:00Z")), HaveField("OpensAt.Time", instant("2021-03-26T10:00:30Z")),
		HaveField("Message", "revision 'main@sha1:r1' soaking since 2021-03-26T10:00:00Z in ManifestGeneration "+ns+
			"/staging: promoted at 2021-03-26T10:00:30Z unless it fails before"),
	))
	g.Expect(getGate(g, ns, "production").Status.OpenedForRevision).To(BeEmpty())

	// Staging fails during the soak, then recovers: the soak starts again from its recovery.
	setClock("2021-03-26T10:00:20Z")
	staging.applied("main@sha1:r1", "2021-03-26T10:00:00Z", "False", "2021-03-26T10:00:20Z")
	g.Eventually(func(g Gomega) string { return promotionOf(ns, "production")(g).Message }, timeout).Should(Equal(
		"revision 'main@sha1:r1' waits for ManifestGeneration " + ns + "/staging: it is not Ready: Applied revision: main@sha1:r1"))
	staging.applied("main@sha1:r1", "2021-03-26T10:00:00Z", "True", "2021-03-26T10:00:25Z")
	g.Eventually(promotionOf(ns, "production"), timeout).Should(HaveField("OpensAt.Time", instant("2021-03-26T10:00:55Z")))
	setClock("2021-03-26T10:00:50Z")
	g.Consistently(openedCondition(ns, "production"), "2s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))

	setClock("2021-03-26T10:00:56Z")
	g.Eventually(openedCondition(ns, "production"), timeout).Should(Equal(
		"True|ReconciliationSucceeded|Gate opened for revision 'main@sha1:r1' by promotion"))
	gate := getGate(g, ns, "production")
	g.Expect(condition(gate, meta.ReadyCondition)).To(Equal("True|Succeeded|Gate opened for revision 'main@sha1:r1' by the open " +
		"request of promotion until the next request (no duration and no spec.window: it does not end by itself)"))
	g.Expect(gate.Status.OpenedForRevision).To(Equal("main@sha1:r1"))
	g.Expect(gate.Status.Promotion.Revision).To(Equal("main@sha1:r1"))
	g.Expect(gate.Status.Promotion.PromotedAt.Time).To(instant("2021-03-26T10:00:56Z"))
	g.Expect(gate.Status.History[0]).To(And(HaveField("Opened", true), HaveField("Cause", "request"), HaveField("RequestedBy", "promotion")))
	msg := "revision 'main@sha1:r1' applied and Ready for 31s in ManifestGeneration " + ns + "/staging"
	g.Eventually(eventsOf(ns, "production"), timeout).Should(ContainElements(
		"Normal Promoted: revision 'main@sha1:r1' promoted: "+msg,
		"Normal GateOpened: Gate opened for revision 'main@sha1:r1' by promotion (request, requested by promotion: "+msg+")"))

	// A newer revision in staging: production stays opened for r1 alone while r2 soaks.
	setClock("2021-03-26T10:01:05Z")
	staging.applied("main@sha1:r2", "2021-03-26T10:01:00Z", "True", "2021-03-26T10:00:25Z")
	g.Eventually(func(g Gomega) string { return promotionOf(ns, "production")(g).Candidate }, timeout).Should(Equal("main@sha1:r2"))
	g.Consistently(func(g Gomega) string { return getGate(g, ns, "production").Status.OpenedForRevision }, "2s").Should(Equal("main@sha1:r1"))
	setClock("2021-03-26T10:01:31Z")
	g.Eventually(func(g Gomega) string { return getGate(g, ns, "production").Status.OpenedForRevision }, timeout).Should(Equal("main@sha1:r2"))
	g.Eventually(promotionOf(ns, "production"), timeout).Should(HaveField("Message",
		"revision 'main@sha1:r2' is promoted; no newer revision is applied upstream"))
}

// A check holds the gate closed while its readyExpr is false, whatever else would open it, and
// the gate opens once the Deployment is available. A check of another namespace, or of a
// Secret, needs spec.serviceAccountName.
func TestGateChecks(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:00Z")
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "podinfo"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "podinfo"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "podinfo"}}}}},
	}
	g.Expect(k8s.Create(context.Background(), deploy)).To(Succeed())
	deploy.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}
	g.Expect(k8s.Status().Update(context.Background(), deploy)).To(Succeed())
	createGate(t, ns, "production", gatingv1.GateSpec{Interval: duration("1s"), Checks: []gatingv1.GateCheck{{
		GateObjectReference: gatingv1.GateObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"},
		ReadyExpr:           "status.availableReplicas == status.replicas",
	}}})

	failing := "check 'apps/v1/Deployment " + ns + "/podinfo' readyExpr evaluated to false"
	g.Eventually(openedCondition(ns, "production"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by a failing check"))
	gate := getGate(g, ns, "production")
	g.Expect(gate.Status.Checks).To(Equal(failing))
	g.Expect(condition(gate, meta.ReadyCondition)).To(Equal("True|Succeeded|Gate closed as a check fails: " + failing))
	g.Eventually(eventsOf(ns, "production"), timeout).Should(ContainElement(
		"Normal GateClosed: Gate closed by a failing check (checks: " + failing + ")"))

	deploy.Status.ReadyReplicas, deploy.Status.AvailableReplicas = 2, 2
	g.Expect(k8s.Status().Update(context.Background(), deploy)).To(Succeed())
	g.Eventually(openedCondition(ns, "production"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))
	g.Expect(getGate(g, ns, "production").Status.Checks).To(BeEmpty())

	// Another namespace, without spec.serviceAccountName: not read, and the gate stays closed.
	other := env.Namespace(t)
	createGate(t, ns, "elsewhere", gatingv1.GateSpec{Interval: duration("1s"), Checks: []gatingv1.GateCheck{{
		GateObjectReference: gatingv1.GateObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo", Namespace: other},
		Ready:               true,
	}}})
	g.Eventually(openedCondition(ns, "elsewhere"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by a failing check"))
	g.Expect(getGate(g, ns, "elsewhere").Status.Checks).To(Equal("check of Deployment " + other +
		"/podinfo is in another namespace than the gate: set spec.serviceAccountName, whose permissions decide what the gate may read"))

	// A Secret, even of the gate's namespace: whoever may write a Gate may not read it.
	createGate(t, ns, "secretive", gatingv1.GateSpec{Interval: duration("1s"), Checks: []gatingv1.GateCheck{{
		GateObjectReference: gatingv1.GateObjectReference{APIVersion: "v1", Kind: "Secret", Name: "token"},
		ReadyExpr:           "data.token == 'czNjcjN0'",
	}}})
	g.Eventually(openedCondition(ns, "secretive"), timeout).Should(Equal("False|ReconciliationSucceeded|Gate closed by a failing check"))
	g.Expect(getGate(g, ns, "secretive").Status.Checks).To(Equal("check of Secret " + ns +
		"/token is read only as spec.serviceAccountName, whose permissions decide what the gate may read"))
}

// Promotion and approvals on one gate: the soaked revision becomes the open request pending
// approval (N of M, for that revision), and two approvers let exactly it through.
func TestGatePromotionWithApproval(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T10:00:40Z")
	staging := newStage(t, ns, "staging")
	staging.applied("main@sha1:r1", "2021-03-26T10:00:00Z", "True", "2021-03-26T10:00:00Z")
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateClosed, Interval: duration("1s"),
		Promotion: &gatingv1.GatePromotion{Soak: duration("30s"), From: []gatingv1.GateObjectReference{
			{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Name: "staging"}}},
		Approval: &gatingv1.GateApprovalSpec{Required: ptr.To[int32](2), Rules: []gatingv1.GateApprovalRule{
			{Name: "sre", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"ana", "bo"}}},
			{Name: "qa", Minimum: 1, Approvers: gatingv1.GateApprovers{Users: []string{"cy"}}},
		}},
	})
	g.Eventually(approvedCondition(ns, "production"), timeout).Should(Equal(
		"False|ApprovalPending|waiting for 1 more approval from rule sre (ana, bo) and 1 more approval from rule qa (cy); 0 of 2 in all"))
	pending := getGate(g, ns, "production").Status.Approval.Pending
	g.Expect(pending).To(And(HaveField("RequestedBy", "promotion"), HaveField("Revision", "main@sha1:r1")))

	setClock("2021-03-26T10:01:00Z")
	respondFor(t, ns, "production", "ana", "main@sha1:r1", gatingv1.DecisionApprove)
	g.Consistently(openedCondition(ns, "production"), "2s").Should(Equal("False|ReconciliationSucceeded|Gate closed by default"))
	respondFor(t, ns, "production", "cy", "main@sha1:r1", gatingv1.DecisionApprove)
	g.Eventually(openedCondition(ns, "production"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by approval"))
	st := getGate(g, ns, "production").Status
	g.Expect(st.OpenedForRevision).To(Equal("main@sha1:r1"))
	g.Expect(st.History[0]).To(And(HaveField("Cause", "approval"), HaveField("RequestedBy", "promotion"),
		HaveField("ApprovedBy", ConsistOf("ana", "cy"))))
}

// With spec.serviceAccountName, a gate reads the objects of another namespace as that account:
// what its RBAC refuses holds the promotion and says so; once a Role lets it read staging's
// ManifestGeneration, the revision is promoted.
func TestGatePromotionReadsAsItsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	prod, stagingNS := env.Namespace(t), env.Namespace(t)
	setClock("2021-03-26T10:00:10Z")
	staging := newStage(t, stagingNS, "app")
	staging.applied("main@sha1:r1", "2021-03-26T10:00:00Z", "True", "2021-03-26T10:00:00Z")
	createGate(t, prod, "production", gatingv1.GateSpec{Default: gatingv1.GateClosed, Interval: duration("1s"), ServiceAccountName: "promoter",
		Promotion: &gatingv1.GatePromotion{From: []gatingv1.GateObjectReference{
			{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Name: "app", Namespace: stagingNS}}}})

	g.Eventually(func(g Gomega) string { return promotionOf(prod, "production")(g).Message }, timeout).Should(And(
		HavePrefix("waiting for ManifestGeneration "+stagingNS+"/app: it cannot be read: "),
		ContainSubstring(`User "system:serviceaccount:`+prod+`:promoter" cannot get resource "manifestgenerations"`)))
	g.Expect(getGate(g, prod, "production").Status.OpenedForRevision).To(BeEmpty())

	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: stagingNS, Name: "promotion-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"generator.toolkit.fluxcd.io"}, Resources: []string{"manifestgenerations"}, Verbs: []string{"get"}}},
	})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: stagingNS, Name: "production-promoter"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "promotion-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "promoter", Namespace: prod}},
	})).To(Succeed())
	g.Eventually(func(g Gomega) string { return getGate(g, prod, "production").Status.OpenedForRevision }, timeout).Should(Equal("main@sha1:r1"))
}
