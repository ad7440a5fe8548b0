package fluxreceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/testenv"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// A Receiver for every GitRepository of its namespace (`*`) asks only the one that fetches the
// pushed repository at the pushed branch: of three GitRepositories, two of the pushed URL (on
// two branches) and one of another URL on the pushed branch, exactly one. Objects of other kinds
// are asked as Flux asks them. The event on the Receiver names what was asked.
func TestReceiverRoutesPushToItsGitRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "routing-token"
	newGitRepository(t, ns, "app-main", "ssh://git@git.example.com/team/app.git", map[string]any{"branch": "main"})
	newGitRepository(t, ns, "app-dev", "https://git.example.com/team/app", map[string]any{"branch": "dev"})
	newGitRepository(t, ns, "other-main", "https://git.example.com/team/other.git", map[string]any{"branch": "main"})
	newKustomization(t, ns, "apps", "app-main")
	path := newReceiver(t, ns, "all", "github", token, []notificationv1.ReceiverResource{
		resource("GitRepository", "*"), resource("Kustomization", "apps"),
	}, func(r *notificationv1.Receiver) { r.Spec.Events = []string{"push"} })

	push := githubPush("Git.Example.com", "team/app", "refs/heads/main")
	code, msg := post(t, path, push, map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, push), "X-GitHub-Event": "push"})
	g.Expect(code).To(Equal(200), msg)
	g.Expect(msg).To(Equal("reconciliation requested for 2 objects"))
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app-main")(g)).NotTo(BeEmpty())
	g.Expect(requestedAt(kustomizationGVK, ns, "apps")(g)).NotTo(BeEmpty())
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app-dev")(g)).To(BeEmpty())
	g.Expect(requestedAt(gitRepositoryGVK, ns, "other-main")(g)).To(BeEmpty())
	g.Eventually(testenv.EventsOf(k8s, types.NamespacedName{Namespace: ns, Name: "all"}, notificationv1.ReceiverKind), 10*time.Second).
		Should(ContainElement("Normal ReconciliationRequested: push of refs/heads/main to https://Git.Example.com/team/app.git: " +
			"reconciliation requested for GitRepository/app-main, Kustomization/apps " +
			"(2 GitRepositories not following the pushed repository and reference)"))

	// A push to dev asks app-dev; a push elsewhere asks no GitRepository.
	dev := githubPush("git.example.com", "TEAM/App", "refs/heads/dev")
	code, msg = post(t, path, dev, map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, dev), "X-GitHub-Event": "push"})
	g.Expect(code).To(Equal(200), msg)
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app-dev")(g)).NotTo(BeEmpty())
	g.Expect(requestedAt(gitRepositoryGVK, ns, "other-main")(g)).To(BeEmpty())
}

// An event that is not a push asks every target, as Flux does: routing only narrows pushes.
func TestReceiverAsksEveryTargetForOtherEvents(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "release-token"
	newGitRepository(t, ns, "a", "https://git.example.com/team/a", nil)
	newGitRepository(t, ns, "b", "https://git.example.com/team/b", nil)
	path := newReceiver(t, ns, "all", "github", token, []notificationv1.ReceiverResource{resource("GitRepository", "*")}, nil)

	body := []byte(`{"action":"published","release":{"tag_name":"v1"},"repository":{"clone_url":"https://git.example.com/team/a.git"}}`)
	code, msg := post(t, path, body, map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, body), "X-GitHub-Event": "release"})
	g.Expect(code).To(Equal(200), msg)
	g.Expect(msg).To(Equal("reconciliation requested for 2 objects"))
}

// spec.resourceFilter and spec.resources[].filter leave objects out, reading the object's
// metadata (res) and the body (req).
func TestReceiverFilters(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	newGitRepository(t, ns, "frontend", "https://git.example.com/team/frontend", nil)
	newGitRepository(t, ns, "backend", "https://git.example.com/team/backend", nil)
	newGitRepository(t, ns, "docs", "https://git.example.com/team/docs", nil)
	path := newReceiver(t, ns, "filtered", "generic", "filter-token", []notificationv1.ReceiverResource{
		{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "*"},
			Filter: "res.metadata.name != 'docs'"},
	}, func(r *notificationv1.Receiver) { r.Spec.ResourceFilter = "res.metadata.name in req.components" })

	code, msg := post(t, path, []byte(`{"components":["frontend","docs"]}`), nil)
	g.Expect(code).To(Equal(200), msg)
	g.Expect(msg).To(Equal("reconciliation requested for 1 object"))
	g.Expect(requestedAt(gitRepositoryGVK, ns, "frontend")(g)).NotTo(BeEmpty())
	g.Expect(requestedAt(gitRepositoryGVK, ns, "backend")(g)).To(BeEmpty())
	g.Expect(requestedAt(gitRepositoryGVK, ns, "docs")(g)).To(BeEmpty())
}
