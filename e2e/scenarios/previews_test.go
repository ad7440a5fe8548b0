package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// Preview environments from a real Gitea's pull requests: a pull request labelled
// "deploy/preview" gets a preview (a ConfigMap here, named after the request, holding its head),
// a "deploy/hold" label freezes it at the commit it runs while new commits arrive, and closing
// the request deletes its preview.
func TestScenarioPreviewsFromGiteaPullRequests(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "previews")
	gitea := testserver.NewGitea(t)
	gitea.CreateOrg(t, "team")
	repo := gitea.CreateRepo(t, "team", "app")
	devToken := gitea.CreateUser(t, "dev")
	repo.AddCollaborator(t, "dev", "write")
	repo.CreateLabel(t, "deploy/preview")
	repo.CreateLabel(t, "deploy/hold")
	readerToken := gitea.CreateUser(t, "fleet-reader")
	repo.AddCollaborator(t, "fleet-reader", "read")

	open := func(branch, title string) (int64, string) {
		repo.CreateBranch(t, branch, "main")
		sha := repo.As(devToken).Commit(t, branch, "work on "+branch, map[string]string{"app.txt": branch})
		pr := repo.As(devToken).OpenPullRequest(t, branch, "main", title)
		repo.AddLabels(t, pr, "deploy/preview")
		return pr, sha
	}
	prA, shaA := open("feat/a", "Feature A")
	prB, shaB := open("feat/b", "Feature B")

	s.g.Expect(k8s().Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "gitea-token"},
		StringData: map[string]string{"username": "fleet-reader", "password": readerToken},
	})).To(Succeed())
	s.create(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: app-previews
  annotations:
    fluxcd.controlplane.io/reconcileEvery: 1s
spec:
  type: GiteaPullRequest
  url: __URL__/team/app
  secretRef:
    name: gitea-token
  filter:
    labels: ["deploy/preview"]
  skip:
    labels: ["deploy/hold"]
  defaultValues:
    env: preview
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: app-previews
spec:
  serviceAccountName: applier
  inputsFrom:
  - kind: ResourceSetInputProvider
    name: app-previews
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-pr-<< inputs.id >>
    data:
      sha: << inputs.sha >>
      branch: << inputs.branch >>
      author: << inputs.author >>
      env: << inputs.env >>
`, "__URL__", gitea.URL())

	preview := func(pr int64) func(g Gomega) map[string]string {
		return func(g Gomega) map[string]string {
			cm := object(g, configMapGVK, s.ns, "app-pr-"+strconv.FormatInt(pr, 10))
			if cm == nil {
				return nil
			}
			data := map[string]string{}
			for k, v := range cm.Object["data"].(map[string]any) {
				data[k] = fmt.Sprint(v)
			}
			return data
		}
	}
	s.g.Eventually(preview(prA), time.Minute).Should(Equal(map[string]string{"sha": shaA, "branch": "feat/a", "author": "dev", "env": "preview"}))
	s.g.Eventually(preview(prB), 10*time.Second).Should(HaveKeyWithValue("sha", shaB))

	// Held: a new commit to A waits while "deploy/hold" is on; B moves on.
	repo.AddLabels(t, prA, "deploy/hold")
	time.Sleep(2 * time.Second) // the provider has seen the label before the commit
	newA := repo.As(devToken).Commit(t, "feat/a", "more work", map[string]string{"app.txt": "a2"})
	newB := repo.As(devToken).Commit(t, "feat/b", "more work", map[string]string{"app.txt": "b2"})
	s.g.Eventually(preview(prB), 15*time.Second).Should(HaveKeyWithValue("sha", newB))
	s.g.Consistently(preview(prA), 4*time.Second).Should(HaveKeyWithValue("sha", shaA))

	// Released: A's preview takes its newest commit.
	repo.RemoveLabel(t, prA, "deploy/hold")
	s.g.Eventually(preview(prA), 15*time.Second).Should(HaveKeyWithValue("sha", newA))

	// Closed: B's preview is garbage-collected, A's stays.
	repo.ClosePullRequest(t, prB)
	s.g.Eventually(exists(configMapGVK, s.ns, "app-pr-"+strconv.FormatInt(prB, 10)), 15*time.Second).Should(BeFalse())
	s.g.Expect(preview(prA)(s.g)).To(HaveKeyWithValue("sha", newA))
}
