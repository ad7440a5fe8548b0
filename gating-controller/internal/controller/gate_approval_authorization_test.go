package controller

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Regression tests of the approval paths' authorization, replaying Kargo's CVE-2026-27111 and
// CVE-2026-27112 (an approval, and a batch create, that skipped the authorization of the user in
// whose name they were made). An approval is a GateApproval created by the responder: RBAC
// (create on gateapprovals) decides who may respond, and the gateapproval-identity admission
// policy that the response is in the creator's own name. Every way of creating one goes through
// both: a plain create, a server-side apply, and `kubectl apply` of a List. The gate receiver's
// approvals and the dashboard's act as the caller and are refused the same way
// (gatereceiver's TestReceiverApprovesInTheCallersOwnName, kubectl-gate's
// TestUIApprovesAsTheUserRunningIt).
//
// Checked against a reintroduced bug: with the policy's spec.user rule made `true` in
// deploy/gating-controller/gateapproval-identity-policy.yaml, a response in another user's name
// is taken, and this test fails.

// asUser is a client acting as user with only the RBAC the test gives it (no system:masters).
func asUser(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allowResponses lets users read gates and, with create, respond to them in ns.
func allowResponses(t *testing.T, ns string, create bool, users ...string) {
	t.Helper()
	g := NewWithT(t)
	verbs := []string{"get", "list", "watch"}
	if create {
		verbs = append(verbs, "create", "patch")
	}
	name := "responders-" + strings.Join(verbs, "-")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{gatingv1.GroupVersion.Group}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{gatingv1.GroupVersion.Group}, Resources: []string{"gateapprovals"}, Verbs: verbs},
	}}
	g.Expect(k8s.Create(context.Background(), role)).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	for _, u := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	g.Expect(k8s.Create(context.Background(), binding)).To(Succeed())
}

func approvalOf(ns, user string) *gatingv1.GateApproval {
	return &gatingv1.GateApproval{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatingv1.GroupVersion.String(), Kind: "GateApproval"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-" + user},
		Spec: gatingv1.GateApprovalResponseSpec{Gate: "release", Decision: gatingv1.DecisionApprove, User: user,
			Groups: []string{"system:authenticated"}},
	}
}

func TestGateApprovalPathsAreAuthorized(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	approvalPolicy(t)
	allowResponses(t, ns, false, "mallory")
	allowResponses(t, ns, true, "eve")

	// Without create on gateapprovals: no response, in any name, by create or by apply.
	g.Eventually(func() error { return asUser(t, "mallory").Create(ctx, approvalOf(ns, "mallory")) }, timeout).
		Should(Satisfy(apierrors.IsForbidden))
	err := asUser(t, "mallory").Patch(ctx, approvalOf(ns, "mallory"), client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)

	// With create, in another's name: refused by create (once the policy is in effect) and by
	// server-side apply.
	forged := approvalOf(ns, "ana")
	forged.Name, forged.GenerateName = "", "release-forged-"
	g.Eventually(func() error { return asUser(t, "eve").Create(ctx, forged.DeepCopy()) }, timeout).
		Should(MatchError(ContainSubstring("spec.user must be 'eve'")))
	err = asUser(t, "eve").Patch(ctx, approvalOf(ns, "ana"), client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership)
	g.Expect(err).To(MatchError(ContainSubstring("spec.user must be 'eve', the user creating this GateApproval, but it is 'ana'")))

	// kubectl apply of a List (a batch): each item is admitted alone, so the forged one is
	// refused while eve's own is created.
	list := `apiVersion: v1
kind: List
items:
` + indent(gateApprovalYAML(ns, "eve")) + indent(gateApprovalYAML(ns, "ana"))
	out, err := kubectl(t, list, "apply", "--as", "eve", "--as-group", "system:authenticated", "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("spec.user must be 'eve', the user creating this GateApproval, but it is 'ana'"))
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release-eve"}, &gatingv1.GateApproval{})).To(Succeed())
	err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release-ana"}, &gatingv1.GateApproval{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the forged approval must not exist: %v", err)

	// mallory's List: nothing.
	out, err = kubectl(t, "apiVersion: v1\nkind: List\nitems:\n"+indent(gateApprovalYAML(ns, "mallory")),
		"apply", "--as", "mallory", "--as-group", "system:authenticated", "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("forbidden"))
}

func gateApprovalYAML(ns, user string) string {
	return `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateApproval
metadata:
  name: release-` + user + `
  namespace: ` + ns + `
spec:
  gate: release
  decision: approve
  user: ` + user + `
  groups: [system:authenticated]
`
}

// indent makes a manifest an item of a List.
func indent(manifest string) string {
	lines := strings.Split(strings.TrimSuffix(manifest, "\n"), "\n")
	for i, l := range lines {
		prefix := "    "
		if i == 0 {
			prefix = "  - "
		}
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// kubectl runs the real kubectl against the test's API server as the administrator (--as
// impersonates), with stdin, and returns its combined output.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(env.Root, "bin", "kubectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: run make tools", bin)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
