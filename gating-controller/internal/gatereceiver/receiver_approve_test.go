package gatereceiver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// approvalGate creates a gate closed by default whose open requests need the approval of both
// users, and waits until the controller has evaluated it. With receiverToken, the gate's
// receiver takes that token too, for the pipeline that asks to open it.
func approvalGate(t *testing.T, ns, name, receiverToken string, users ...string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	gate := &gatingv1.Gate{
		ObjectMeta: objectMeta(ns, name),
		Spec: gatingv1.GateSpec{
			Default: gatingv1.GateClosed,
			Approval: &gatingv1.GateApprovalSpec{Required: ptr.To[int32](2), Rules: []gatingv1.GateApprovalRule{
				{Name: "release-managers", Minimum: 2, Approvers: gatingv1.GateApprovers{Users: users}},
			}},
		},
	}
	if receiverToken != "" {
		secret := &corev1.Secret{ObjectMeta: objectMeta(ns, name+"-token"),
			Data: map[string][]byte{gatingv1.ReceiverTokenKey: []byte(receiverToken)}}
		g.Expect(k8s.Create(ctx, secret)).To(Succeed())
		gate.Spec.Receiver = &gatingv1.GateReceiver{SecretRef: meta.LocalObjectReference{Name: secret.Name}}
	}
	g.Expect(k8s.Create(ctx, gate)).To(Succeed())
	g.Eventually(opened(ns, name), 10*time.Second).Should(Equal("False"))
}

// approvalState is the gate's status.approval as "state approvedBy...".
func approvalState(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		st := getGate(g, ns, name).Status.Approval
		if st == nil {
			return ""
		}
		return strings.TrimSpace(string(st.State) + " " + strings.Join(st.ApprovedBy, " "))
	}
}

// Two approvers approve a pending open request through the receiver, each with their own
// ServiceAccount token: each GateApproval is in its caller's name, as the API server knows it,
// and the gate opens once both count. A caller without RBAC gets the API server's refusal and
// creates nothing, a token the API server does not know gets 401, a body cannot name the
// approver, and no token shows in the answers, the events or the logs.
func TestReceiverApprovesInTheCallersOwnName(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	approvalPolicy(t)
	ana, bo, eve := serviceAccountToken(t, ns, "ana"), serviceAccountToken(t, ns, "bo"), serviceAccountToken(t, ns, "eve")
	grantRespond(t, ns, map[string]string{"ana": ana, "bo": bo})
	anaUser, boUser := serviceAccountUser(ns, "ana"), serviceAccountUser(ns, "bo")
	const pipelineToken = "release-pipeline-token"
	approvalGate(t, ns, "release", pipelineToken, anaUser, boUser)
	var answers []string
	call := func(path string, body []byte, token string) (int, string) {
		code, msg := post(t, path, body, withToken(token))
		answers = append(answers, msg)
		return code, msg
	}

	// The pipeline asks to open the gate with the gate's token: the request waits for approvals.
	code, msg := call("/gates/"+ns+"/release/open", requestBody("Release 1.2.3", time.Now()), pipelineToken)
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(approvalState(ns, "release"), 10*time.Second).Should(Equal("Pending"))

	approve := "/gates/" + ns + "/release/approve"
	// There is no identity in the body to forge: a body that tries is refused.
	code, msg = call(approve, []byte(`{"reason":"LGTM","user":"`+anaUser+`","groups":["system:masters"],"timestamp":"`+
		time.Now().UTC().Format(time.RFC3339)+`"}`), bo)
	g.Expect(code).To(Equal(400), msg)
	g.Expect(msg).To(ContainSubstring(`unknown field "user"`))
	code, msg = call(approve, respondBodyOf("me too"), eve)
	g.Expect(code).To(Equal(403), msg)
	g.Expect(msg).To(Equal(`User "` + serviceAccountUser(ns, "eve") + `" cannot create resource "gateapprovals" in API group "gating.toolkit.fluxcd.io" in the namespace "` + ns + `"`))
	for _, token := range []string{"not-a-kubernetes-token", pipelineToken, ana + "x"} {
		code, msg = call(approve, respondBodyOf("guess"), token)
		g.Expect(code).To(Equal(401), msg)
		g.Expect(msg).To(Equal("the API server did not accept the token"))
	}
	g.Expect(gateApprovals(g, ns)).To(BeEmpty())

	code, msg = call(approve, respondBodyOf("Tested on staging"), ana)
	g.Expect(code).To(Equal(201), msg)
	g.Expect(msg).To(MatchRegexp(`^approved by ` + anaUser + ` \(GateApproval release-[a-z0-9]+\)$`))
	g.Eventually(approvalState(ns, "release"), 10*time.Second).Should(Equal("Pending " + anaUser))
	g.Expect(opened(ns, "release")(g)).To(Equal("False"))

	code, msg = call(approve, respondBodyOf("LGTM"), bo)
	g.Expect(code).To(Equal(201), msg)
	g.Eventually(approvalState(ns, "release"), 10*time.Second).Should(Or(
		Equal("Approved "+anaUser+" "+boUser), Equal("Approved "+boUser+" "+anaUser)))
	g.Eventually(opened(ns, "release"), 10*time.Second).Should(Equal("True"))

	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	g.Expect(gateApprovals(g, ns)).To(ConsistOf(
		HaveField("Spec", And(HaveField("Gate", "release"), HaveField("Decision", gatingv1.DecisionApprove),
			HaveField("Reason", "Tested on staging"), HaveField("User", anaUser), HaveField("Groups", ConsistOf(groups)))),
		HaveField("Spec", And(HaveField("Gate", "release"), HaveField("Decision", gatingv1.DecisionApprove),
			HaveField("Reason", "LGTM"), HaveField("User", boUser), HaveField("Groups", ConsistOf(groups)))),
	))
	g.Eventually(func(g Gomega) []string { return eventMessages(g, ns) }, 10*time.Second).Should(ContainElement(
		MatchRegexp(`^ReceiverResponse: approved by ` + anaUser + ` \(GateApproval release-[a-z0-9]+\) through the webhook receiver: Tested on staging$`)))

	lines := logs.Lines()
	g.Expect(lines).To(ContainElement(And(ContainSubstring("approve recorded"), ContainSubstring(anaUser))), "the logs are captured")
	for name, token := range map[string]string{"ana": ana, "bo": bo, "eve": eve} {
		for _, line := range lines {
			g.Expect(line).NotTo(ContainSubstring(token), "%s's token in the logs", name)
		}
		for _, answer := range answers {
			g.Expect(answer).NotTo(ContainSubstring(token), "%s's token in an answer", name)
		}
		for _, event := range eventMessages(g, ns) {
			g.Expect(event).NotTo(ContainSubstring(token), "%s's token in an event", name)
		}
	}
}

// A reject is for the revision of the pending request unless the body names one, as with
// `kubectl gate reject`; the gate needs no spec.receiver, since the caller's token says who
// they are. A gate without spec.approval, an unknown gate, a replayed, stale or malformed
// request, and a request without a token are answered without a GateApproval; a caller who may
// not respond in the namespace learns nothing of its gates.
func TestReceiverRejectsThePendingRevision(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	approvalPolicy(t)
	ana, eve := serviceAccountToken(t, ns, "ana"), serviceAccountToken(t, ns, "eve")
	grantRespond(t, ns, map[string]string{"ana": ana})
	anaUser := serviceAccountUser(ns, "ana")
	approvalGate(t, ns, "release", "", anaUser, serviceAccountUser(ns, "bo"))
	g.Expect(k8s.Create(context.Background(), &gatingv1.Gate{ObjectMeta: objectMeta(ns, "plain"),
		Spec: gatingv1.GateSpec{Default: gatingv1.GateClosed}})).To(Succeed())
	testenv.Annotate(t, k8s, &gatingv1.Gate{ObjectMeta: objectMeta(ns, "release")},
		gatesapi.OpenRequestAnnotation, time.Now().UTC().Format(time.RFC3339Nano),
		gatingv1.OpenRequestedByAnnotation, "alice",
		gatingv1.OpenReasonAnnotation, "Ship 1.2",
		gatingv1.OpenRevisionAnnotation, "main@sha1:4f2c9e1")
	g.Eventually(approvalState(ns, "release"), 10*time.Second).Should(Equal("Pending"))

	reject := "/gates/" + ns + "/release/reject"
	for _, tc := range []struct {
		name, path string
		body       []byte
		headers    map[string]string
		code       int
		msg        string
	}{
		{"no token", reject, respondBodyOf("no"), map[string]string{}, 401,
			"a Kubernetes bearer token is required: Authorization: Bearer <token>"},
		{"basic auth", reject, respondBodyOf("no"), map[string]string{"Authorization": "Basic YW5hOmFuYQ=="}, 401,
			"a Kubernetes bearer token is required: Authorization: Bearer <token>"},
		{"not a gate's name", "/gates/" + ns + "/Release/reject", respondBodyOf("no"), withToken(ana), 404, "no such gate"},
		{"unknown gate", "/gates/" + ns + "/nope/reject", respondBodyOf("no"), withToken(ana), 404, "gate " + ns + "/nope not found"},
		{"unknown gate, caller without RBAC", "/gates/" + ns + "/nope/reject", respondBodyOf("no"), withToken(eve), 403,
			`User "` + serviceAccountUser(ns, "eve") + `" cannot create resource "gateapprovals" in API group "gating.toolkit.fluxcd.io" in the namespace "` + ns + `"`},
		{"no spec.approval", "/gates/" + ns + "/plain/approve", respondBodyOf("yes"), withToken(ana), 409,
			"gate " + ns + "/plain has no spec.approval: nothing waits for approvals (use /open)"},
		{"stale timestamp", reject, requestBody("no", time.Now().Add(-time.Hour)), withToken(ana), 401, "timestamp "},
		{"no timestamp", reject, []byte(`{"reason":"no"}`), withToken(ana), 400,
			"timestamp is required: the time of the request, RFC 3339 such as 2026-11-22T10:00:00Z"},
		{"a for", reject, []byte(`{"for":"1h","timestamp":"` + time.Now().UTC().Format(time.RFC3339) + `"}`), withToken(ana), 400,
			`the body must be a JSON object with reason, revision and timestamp: json: unknown field "for"`},
		{"revision with a space", reject, []byte(`{"revision":"main@sha1:4f2c9e1 extra","timestamp":"` + time.Now().UTC().Format(time.RFC3339) + `"}`),
			withToken(ana), 400, "revision must not contain spaces or control characters"},
	} {
		code, msg := post(t, tc.path, tc.body, tc.headers)
		g.Expect(code).To(Equal(tc.code), tc.name+": "+msg)
		g.Expect(msg).To(HavePrefix(tc.msg), tc.name)
	}
	g.Expect(gateApprovals(g, ns)).To(BeEmpty())

	body := respondBodyOf("not during the migration")
	code, msg := post(t, reject, body, withToken(ana))
	g.Expect(code).To(Equal(201), msg)
	g.Expect(msg).To(MatchRegexp(`^rejected by ` + anaUser + ` for revision main@sha1:4f2c9e1 \(GateApproval release-[a-z0-9]+\)$`))
	code, msg = post(t, reject, body, withToken(ana))
	g.Expect(code).To(Equal(409), msg)
	g.Expect(msg).To(Equal("this request was already received: send a new timestamp"))

	g.Eventually(approvalState(ns, "release"), 10*time.Second).Should(Equal("Rejected"))
	g.Expect(gateApprovals(g, ns)).To(ConsistOf(HaveField("Spec", And(
		HaveField("Decision", gatingv1.DecisionReject), HaveField("Revision", "main@sha1:4f2c9e1"),
		HaveField("User", anaUser), HaveField("Reason", "not during the migration")))))
	g.Expect(opened(ns, "release")(g)).To(Equal("False"))
}
