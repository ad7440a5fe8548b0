package gatereceiver

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

var installApprovalPolicy sync.Once

// approvalPolicy installs deploy/gating-controller/gateapproval-identity-policy.yaml, as
// deploy/default does, once for the package: GateApprovals made through the receiver must pass it.
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

// serviceAccountUser is the username the API server gives the tokens of a ServiceAccount.
func serviceAccountUser(ns, name string) string {
	return "system:serviceaccount:" + ns + ":" + name
}

// serviceAccountToken creates the ServiceAccount ns/name and returns a token of it from the
// TokenRequest API, signed with the key envtest gives the API server (--service-account-*): a
// bearer token the API server accepts, as a caller of the receiver holds one.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: objectMeta(ns, name)})).To(Succeed())
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	expiry := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr.Status.Token).NotTo(BeEmpty())
	return tr.Status.Token
}

// grantRespond lets the ServiceAccounts of ns create GateApprovals there (the RBAC an approver
// needs, and all of it), and waits until the API server's authorizer has it for each token.
func grantRespond(t *testing.T, ns string, accounts map[string]string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: objectMeta(ns, "gate-approver"),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{gatingv1.GroupVersion.Group},
			Resources: []string{"gateapprovals"}, Verbs: []string{"create"}}},
	}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: objectMeta(ns, "gate-approver"),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}
	for name := range accounts {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns})
	}
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	for _, token := range accounts {
		g.Eventually(func(g Gomega) bool {
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: env.Config.Host, BearerToken: token,
				TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}})
			g.Expect(err).NotTo(HaveOccurred())
			review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "create", Group: gatingv1.GroupVersion.Group, Resource: "gateapprovals"}},
			}, metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			return review.Status.Allowed
		}, 10*time.Second).Should(BeTrue())
	}
}

// respondBodyOf is a body of /approve or /reject, made now.
func respondBodyOf(reason string) []byte {
	return requestBody(reason, time.Now())
}

// gateApprovals are the GateApprovals of the namespace.
func gateApprovals(g Gomega, ns string) []gatingv1.GateApproval {
	list := &gatingv1.GateApprovalList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// eventMessages are the events of the namespace, as "reason: message".
func eventMessages(g Gomega, ns string) []string {
	list := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}
