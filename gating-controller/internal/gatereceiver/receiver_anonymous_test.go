package gatereceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// anonymousToken is a bearer token the test API server maps to system:anonymous
// (--token-auth-file), as an authenticating proxy or webhook might.
var anonymousToken = testenv.StaticToken{Token: "token-of-system-anonymous", User: "system:anonymous",
	Groups: []string{"system:unauthenticated"}}

// An anonymous caller never approves, even where RBAC lets system:anonymous create GateApprovals
// (a binding made by mistake, or for a public read-only dashboard): the API server refuses it a
// SelfSubjectReview by default (403), and where a binding allows that too, the receiver refuses
// system:anonymous itself with 401, as a token it does not know.
// Replays the class of flux-operator's CVE-2026-23990 (an empty identity fell back to another).
//
// Checked against a reintroduced bug: with the system:anonymous case removed from responder,
// the approval is created in system:anonymous's name and this test fails.
func TestReceiverRefusesAnonymousCallers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	approvalPolicy(t)
	role := &rbacv1.Role{ObjectMeta: objectMeta(ns, "anyone-approves"), Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{gatingv1.GroupVersion.Group}, Resources: []string{"gateapprovals"}, Verbs: []string{"create"}}}}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: objectMeta(ns, "anyone-approves"),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:anonymous"},
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"},
		}})).To(Succeed())
	const pipelineToken = "anonymous-test-pipeline"
	approvalGate(t, ns, "release", pipelineToken, "system:anonymous", "someone")
	// A receiver of its own: the refusals spend failed attempts of the address.
	url := "http://" + startCountingReceiver(t, Limits{}).Addr().String()
	post := func(t *testing.T, path string, body []byte, headers map[string]string) (int, string) {
		return postTo(t, url, path, body, headers)
	}
	code, msg := post(t, "/gates/"+ns+"/release/open", requestBody("Release 2.0", time.Now()), withToken(pipelineToken))
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(approvalState(ns, "release"), 10*time.Second).Should(Equal("Pending"))

	// By default the API server itself refuses system:anonymous a SelfSubjectReview.
	code, msg = post(t, "/gates/"+ns+"/release/approve", respondBodyOf("anyone may"), withToken(anonymousToken.Token))
	g.Expect(code).To(Equal(403), msg)
	g.Expect(msg).To(ContainSubstring(`User "system:anonymous" cannot create resource "selfsubjectreviews"`))

	// Where a binding lets system:anonymous ask who it is too, the receiver refuses it itself.
	review := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-anonymous-reviews"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}, Verbs: []string{"create"}}}}
	reviewBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: review.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: review.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:anonymous"}}}
	for _, obj := range []client.Object{review, reviewBinding} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	for _, path := range []string{"/approve", "/reject"} {
		g.Eventually(func(g Gomega) string {
			code, msg := post(t, "/gates/"+ns+"/release"+path, respondBodyOf("anyone may "+path), withToken(anonymousToken.Token))
			return fmt.Sprintf("%d %s", code, msg)
		}, 10*time.Second).Should(Equal("401 the API server did not accept the token"), path)
	}
	g.Consistently(func(g Gomega) []gatingv1.GateApproval { return gateApprovals(g, ns) }, 2*time.Second).Should(BeEmpty())
	g.Expect(approvalState(ns, "release")(g)).To(Equal("Pending"))
}
