package scenarios

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// A release gate that opens for the revision its approvers approved, and only for it: alice
// asks for a commit, ana approves it and the ManifestGeneration applies it; a newer commit waits
// for its own approval while what was approved stays applied. Its author, bo, cannot approve it
// (preventSelfApproval: the GitRepository's artifact names him); ana can. All act with
// `kubectl gate` as themselves (--as), as the API server authenticates them.
func TestScenarioApprovalOfARevision(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "approvals")
	g := s.g
	s.gitSecret(s.ns, "git-credentials")
	release := func(n string) map[string]string {
		return map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release\ndata:\n  number: \"" + n + "\"\n"}
	}
	repo, c1 := s.newRepo("release-train", release("1"))

	// alice and ana may read and request on the gates of the namespace, and respond to approvals.
	ctx := context.Background()
	g.Expect(k8s().Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "release-managers"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
			{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gateapprovals"}, Verbs: []string{"get", "list", "create"}},
		}})).To(Succeed())
	g.Expect(k8s().Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "release-managers"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "release-managers"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}, {Kind: rbacv1.UserKind, Name: "ana"},
			{Kind: rbacv1.UserKind, Name: "bo@example.com"}},
	})).To(Succeed())

	s.create(`
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: release
spec:
  default: closed
  window: 1h
  approval:
    preventSelfApproval: true
    rules:
    - name: sre
      approvers:
        users: [ana, bo@example.com]
      minimum: 1
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: release-train
spec:
  interval: 2s
  url: __URL__
  ref:
    branch: master
  secretRef:
    name: git-credentials
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: app
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: release-train
  path: ./app
  interval: 10m
  gates:
    refs: [release]
`, "__URL__", repo.HTTPURL())

	rev1 := "master@sha1:" + c1
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "app", "status", "gates", "waitingRevision"), timeout).Should(Equal(rev1))
	g.Expect(exists(configMapGVK, s.ns, "release")(g)).To(BeFalse())

	s.kubectlGate("open", "release", "ship 1", "--revision", rev1, "-n", s.ns, "--as", "alice")
	out := s.kubectlGate("approve", "release", "looks good", "-n", s.ns, "--as", "ana")
	g.Expect(out).To(ContainSubstring("approved by ana for revision " + rev1))
	g.Eventually(strOf(configMapGVK, s.ns, "release", "data", "number"), timeout).Should(Equal("1"))
	g.Expect(strOf(gateGVK, s.ns, "release", "status", "openedForRevision")(g)).To(Equal(rev1))

	// A newer commit, by bo, waits for its own approval; what was approved stays applied.
	repo.Author = testserver.Identity{Name: "Bo", Email: "bo@example.com"}
	c2 := repo.Commit(t, "release 2", release("2"))
	rev2 := "master@sha1:" + c2
	g.Eventually(conditionOf(manifestGenerationGVK, s.ns, "app", "Blocked"), timeout).Should(ContainSubstring(
		"revision '" + rev2 + "' waits for its own approval (gate '" + s.ns + "/release' is approved for revision '" + rev1 + "')"))
	g.Consistently(strOf(configMapGVK, s.ns, "release", "data", "number"), "4s").Should(Equal("1"))

	s.kubectlGate("open", "release", "ship 2", "--revision", rev2, "-n", s.ns, "--as", "alice")
	g.Eventually(conditionOf(gateGVK, s.ns, "release", "Approved"), timeout).Should(HavePrefix("False|ApprovalPending|"))
	s.kubectlGate("approve", "release", "mine, fine", "-n", s.ns, "--as", "bo@example.com")
	g.Eventually(func(g Gomega) any {
		responses, _, _ := unstructured.NestedSlice(mustObject(g, gateGVK, s.ns, "release").Object, "status", "approval", "responses")
		g.Expect(responses).NotTo(BeEmpty())
		return responses[0]
	}, timeout).Should(And(HaveKeyWithValue("user", "bo@example.com"), HaveKeyWithValue("refused",
		"self-approval: bo@example.com authored revision '"+rev2+"' and spec.approval.preventSelfApproval is set")))
	g.Expect(conditionOf(gateGVK, s.ns, "release", "Approved")(g)).To(HavePrefix("False|ApprovalPending|"))
	g.Consistently(strOf(configMapGVK, s.ns, "release", "data", "number"), "2s").Should(Equal("1"))
	s.kubectlGate("approve", "release", "ok", "-n", s.ns, "--as", "ana")
	g.Eventually(strOf(configMapGVK, s.ns, "release", "data", "number"), timeout).Should(Equal("2"))
}
