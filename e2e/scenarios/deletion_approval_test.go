package scenarios

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

const deletionApprovalManifests = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: deletions
spec:
  default: closed
  window: 10m
  approval:
    required: 2
    rules:
    - name: sre
      approvers:
        users: [ana, cy]
      minimum: 2
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: fleet
spec:
  serviceAccountName: applier
  maxPrune: 20%
  deletionApproval:
    gate: deletions
  inputs: []
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cluster-<< inputs.n >>
    data:
      number: << inputs.n | quote >>
`

// approvers lets users read the gates of the scenario's namespace and respond to their approvals.
func (s *scenario) approvers(users ...string) {
	s.t.Helper()
	ctx := context.Background()
	s.g.Expect(k8s().Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "approvers"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gateapprovals"}, Verbs: []string{"get", "list", "create"}},
		}})).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "approvers"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "approvers"}}
	for _, u := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: u})
	}
	s.g.Expect(k8s().Create(ctx, binding)).To(Succeed())
}

// A mass deletion held for approval: a ResourceSet whose inputs drop from 10 to 1, with maxPrune
// 20%, applies and deletes nothing and puts the 9 objects it would delete to the approvers of its
// deletion gate, as a set with a digest. An approval of that set does not carry over to another
// set; two approvals of the set release exactly its deletions; a rejected set keeps every object.
// The requests are made as the ResourceSet's account, the responses with `kubectl gate` as the
// approvers.
func TestScenarioDeletionHeldForApproval(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "deletion-approval")
	g := s.g
	s.approvers("ana", "cy")
	rset := s.create(deletionApprovalManifests)[1]
	inputsUpTo := func(n int) []any {
		var in []any
		for i := 1; i <= n; i++ {
			in = append(in, map[string]any{"n": fmt.Sprint(i)})
		}
		return in
	}
	setInputs(g, rset, inputsUpTo(10))
	configMaps := func(g Gomega) []string {
		var names []string
		for i := 1; i <= 10; i++ {
			if exists(configMapGVK, s.ns, fmt.Sprintf("cluster-%d", i))(g) {
				names = append(names, fmt.Sprintf("cluster-%d", i))
			}
		}
		return names
	}
	g.Eventually(configMaps, timeout).Should(HaveLen(10))
	g.Eventually(readyOf(resourceSetGVK, s.ns, "fleet"), timeout).Should(HavePrefix("True|"))

	pendingSet := func(g Gomega) map[string]any {
		set, _, _ := unstructured.NestedMap(mustObject(g, resourceSetGVK, s.ns, "fleet").Object, "status", "pendingDeletion")
		return set
	}
	gatePending := func(g Gomega) string {
		return str(mustObject(g, gateGVK, s.ns, "deletions"), "status", "approval", "pending", "revision")
	}

	// 10 -> 1: nothing is applied or deleted; the 9 go to the gate as one set.
	setInputs(g, rset, inputsUpTo(1))
	g.Eventually(readyOf(resourceSetGVK, s.ns, "fleet"), timeout).Should(HavePrefix("False|DeletionPending|"))
	nine := pendingSet(g)
	g.Expect(nine).To(And(HaveKeyWithValue("count", BeEquivalentTo(9)), HaveKeyWithValue("gate", "deletions"),
		HaveKeyWithValue("state", "Pending"), HaveKeyWithValue("digest", HavePrefix("sha256:")),
		HaveKeyWithValue("objects", ConsistOf(fmt.Sprintf("%s_cluster-10__ConfigMap", s.ns), fmt.Sprintf("%s_cluster-2__ConfigMap", s.ns),
			fmt.Sprintf("%s_cluster-3__ConfigMap", s.ns), fmt.Sprintf("%s_cluster-4__ConfigMap", s.ns), fmt.Sprintf("%s_cluster-5__ConfigMap", s.ns),
			fmt.Sprintf("%s_cluster-6__ConfigMap", s.ns), fmt.Sprintf("%s_cluster-7__ConfigMap", s.ns), fmt.Sprintf("%s_cluster-8__ConfigMap", s.ns),
			fmt.Sprintf("%s_cluster-9__ConfigMap", s.ns)))))
	d9 := nine["digest"].(string)
	g.Eventually(gatePending, timeout).Should(Equal(d9))
	g.Expect(str(mustObject(g, gateGVK, s.ns, "deletions"), "status", "approval", "pending", "requestedBy")).
		To(Equal("system:serviceaccount:" + s.ns + ":applier"))
	g.Expect(readyOf(resourceSetGVK, s.ns, "fleet")(g)).To(ContainSubstring(
		"would delete 9 of the 10 objects applied, more than spec.maxPrune 20% allows (2): the deletion of 9 objects (" + d9 +
			") waits for approval on gate 'deletions'"))
	out := s.kubectlGate("approve", "deletions", "decommissioning", "-n", s.ns, "--as", "ana")
	g.Expect(out).To(ContainSubstring("for revision " + d9))
	g.Consistently(configMaps, "3s").Should(HaveLen(10), "one approval of two deletes nothing")

	// Another set (10 -> 2) needs its own approval: ana's approval of the 9 does not count.
	setInputs(g, rset, inputsUpTo(2))
	g.Eventually(func(g Gomega) any { return pendingSet(g)["count"] }, timeout).Should(BeEquivalentTo(8))
	d8 := pendingSet(g)["digest"].(string)
	g.Eventually(gatePending, timeout).Should(Equal(d8))
	g.Eventually(conditionOf(gateGVK, s.ns, "deletions", "Approved"), timeout).Should(HaveSuffix("; 0 of 2 in all"))

	// Back to the 9: a new request; two approvals release exactly them.
	setInputs(g, rset, inputsUpTo(1))
	g.Eventually(gatePending, timeout).Should(Equal(d9))
	s.kubectlGate("approve", "deletions", "decommissioning", "-n", s.ns, "--as", "ana")
	s.kubectlGate("approve", "deletions", "agreed", "-n", s.ns, "--as", "cy")
	g.Eventually(configMaps, timeout).Should(Equal([]string{"cluster-1"}))
	g.Eventually(readyOf(resourceSetGVK, s.ns, "fleet"), timeout).Should(HavePrefix("True|"))
	g.Expect(pendingSet(g)).To(BeNil())

	// cluster-1 replaced by cluster-11, rejected: nothing is applied, cluster-1 stays, and the
	// ResourceSet says why.
	setInputs(g, rset, []any{map[string]any{"n": "11"}})
	g.Eventually(func(g Gomega) any { return pendingSet(g)["count"] }, timeout).Should(BeEquivalentTo(1))
	d1 := pendingSet(g)["digest"].(string)
	g.Eventually(gatePending, timeout).Should(Equal(d1))
	s.kubectlGate("reject", "deletions", "cluster-1 still serves traffic", "-n", s.ns, "--as", "cy")
	g.Eventually(readyOf(resourceSetGVK, s.ns, "fleet"), timeout).Should(And(HavePrefix("False|DeletionRejected|"),
		ContainSubstring("the deletion of 1 object ("+d1+") was rejected by cy: cluster-1 still serves traffic on gate 'deletions'; every object is kept until the set changes")))
	g.Expect(pendingSet(g)).To(HaveKeyWithValue("state", "Rejected"))
	g.Consistently(configMaps, "3s").Should(Equal([]string{"cluster-1"}))
	g.Expect(exists(configMapGVK, s.ns, "cluster-11")(g)).To(BeFalse(), "nothing of the rejected revision is applied")
	g.Eventually(testenv.EventsOf(k8s(), client.ObjectKey{Namespace: s.ns, Name: "fleet"}, "ResourceSet"), timeout).Should(ContainElements(
		"Normal DeletionRequested: the deletion of 9 objects ("+d9+") is put to the approvers of gate 'deletions'",
		HavePrefix("Normal DeletionApproved: the deletion of 9 objects ("+d9+") is approved on gate 'deletions' (revision '"+d9+"' approved by ")))
}

const generationDeletionManifests = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: deletions
spec:
  default: closed
  approval:
    rules:
    - name: sre
      approvers:
        users: [ana]
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: env
spec:
  interval: 2s
  url: __GIT__
  secretRef:
    name: git-credentials
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: env
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: env
  path: ./env
  interval: 10m
  maxPrune: 1
  deletionApproval:
    gate: deletions
`

// The same brake on a ManifestGeneration: a commit that empties most of its path deletes
// nothing until the gate's approver approves the set, then deletes exactly it.
func TestScenarioGenerationDeletionHeldForApproval(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "generation-deletion")
	g := s.g
	s.approvers("ana")
	s.gitSecret(s.ns, "git-credentials")
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		files["env/"+n+".yaml"] = configMapYAML("env-"+n, "v1")
	}
	repo, _ := s.newRepo("generation-deletion", files)
	s.create(generationDeletionManifests, "__GIT__", repo.HTTPURL())
	g.Eventually(readyOf(manifestGenerationGVK, s.ns, "env"), timeout).Should(HavePrefix("True|"))

	c2 := repo.Commit(t, "keep a", map[string]string{"env/b.yaml": "", "env/c.yaml": "", "env/d.yaml": ""})
	g.Eventually(readyOf(manifestGenerationGVK, s.ns, "env"), timeout).Should(And(HavePrefix("False|DeletionPending|revision master@sha1:" + c2 +
		" would delete 3 of the 4 objects applied, more than spec.maxPrune 1 allows (1): the deletion of 3 objects (sha256:")))
	g.Expect(str(mustObject(g, gateGVK, s.ns, "deletions"), "status", "approval", "pending", "requestedBy")).
		To(Equal("system:serviceaccount:" + s.ns + ":applier"))
	g.Expect(exists(configMapGVK, s.ns, "env-d")(g)).To(BeTrue())

	s.kubectlGate("approve", "deletions", "cleaning up", "-n", s.ns, "--as", "ana")
	g.Eventually(exists(configMapGVK, s.ns, "env-d"), timeout).Should(BeFalse())
	g.Eventually(readyOf(manifestGenerationGVK, s.ns, "env"), timeout).Should(HavePrefix("True|"))
	g.Expect(exists(configMapGVK, s.ns, "env-a")(g)).To(BeTrue())
	set, _, _ := unstructured.NestedMap(mustObject(g, manifestGenerationGVK, s.ns, "env").Object, "status", "pendingDeletion")
	g.Expect(set).To(BeNil())
}
