package fluxreceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/testenv"
	"github.com/sluice-gitops/sluice/shared/testserver"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// A real Gitea's push webhook (Gitea's own type, the Receiver's token as its secret) reaches a
// `gitea` Receiver for every GitRepository of the namespace: the one that fetches the repository
// at the pushed branch is asked to reconcile; the one on another branch and the one of another
// repository are not. (No branch is created in Gitea besides main: Gitea announces a new branch
// as a push, asynchronously, maybe after the webhook is added.)
func TestReceiverGiteaPush(t *testing.T) {
	g := NewWithT(t)
	gitea := testserver.NewGitea(t)
	repo := gitea.CreateRepo(t, testserver.GiteaAdmin, "app")
	other := gitea.CreateRepo(t, testserver.GiteaAdmin, "other")

	ns := env.Namespace(t)
	const token = "gitea-webhook-secret-5d2c"
	newGitRepository(t, ns, "app-main", repo.HTTPURL(), map[string]any{"branch": "main"})
	newGitRepository(t, ns, "app-dev", repo.HTTPURL(), map[string]any{"branch": "dev"})
	newGitRepository(t, ns, "other-main", other.HTTPURL(), map[string]any{"branch": "main"})
	path := newReceiver(t, ns, "gitea", notificationv1.GiteaReceiver, token,
		[]notificationv1.ReceiverResource{resource("GitRepository", "*")},
		func(r *notificationv1.Receiver) { r.Spec.Events = []string{"push"} })
	repo.AddWebhook(t, serverURL+path, token, "push")

	repo.Commit(t, "main", "Change the README", map[string]string{"README.md": "pushed through Gitea\n"})
	g.Eventually(requestedAt(gitRepositoryGVK, ns, "app-main"), 30*time.Second).ShouldNot(BeEmpty())
	g.Consistently(func(g Gomega) []string {
		return []string{requestedAt(gitRepositoryGVK, ns, "app-dev")(g), requestedAt(gitRepositoryGVK, ns, "other-main")(g)}
	}, 2*time.Second).Should(Equal([]string{"", ""}))
	g.Eventually(testenv.EventsOf(k8s, types.NamespacedName{Namespace: ns, Name: "gitea"}, notificationv1.ReceiverKind), 10*time.Second).
		Should(ContainElement("Normal ReconciliationRequested: push of refs/heads/main to " + repo.HTTPURL() +
			": reconciliation requested for GitRepository/app-main " +
			"(2 GitRepositories not following the pushed repository and reference)"))
}
