package scenarios

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

var providerGVK = schema.GroupVersionKind{Group: "notification.toolkit.fluxcd.io", Version: "v1beta3", Kind: "Provider"}

const commitStatusManifests = `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: gitea
spec:
  type: gitea
  address: __REPO__
  secretRef:
    name: gitea-token
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: commit-status
spec:
  providerRef:
    name: gitea
  eventSources:
    - kind: Kustomization
      name: app
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 2s
  url: __REPO__.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: app
spec:
  interval: 1m
  path: ./deploy
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: app
`

// Commit statuses on the real Gitea, as Flux users get them: Flux's kustomize-controller, run
// with --events-addr pointing at the gating-controller, applies a commit fetched by the
// source-controller, and the Alert's gitea Provider sets Flux's statuses (pending while it
// progresses, then success, with the Kustomization's context) on that commit; the next commit
// gets its own.
func TestScenarioAlertsCommitStatusOnGitea(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "alerts-gitea")
	g := s.g
	kustomizeController(t)
	gitea := testserver.NewGitea(t)
	repo := gitea.CreateRepo(t, testserver.GiteaAdmin, "app")
	first := repo.Commit(t, "main", "v1", map[string]string{"deploy/app.yaml": configMapYAML("status-app", "v1")})
	g.Expect(k8s().Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "gitea-token"},
		StringData: map[string]string{"token": gitea.AdminToken()},
	})).To(Succeed())
	s.create(commitStatusManifests, "__REPO__", gitea.URL()+"/"+repo.Owner+"/"+repo.Name)

	uid, _, _ := strings.Cut(string(mustObject(g, providerGVK, s.ns, "gitea").GetUID()), "-")
	applied := And(HaveField("Context", "kustomization/app/"+uid), HaveField("State", "success"),
		HaveField("Description", "reconciliation succeeded"), HaveField("Creator.Login", testserver.GiteaAdmin))
	g.Eventually(func() []testserver.GiteaStatus { return repo.Statuses(t, first) }, timeout).Should(ContainElement(applied),
		"the applied commit has the Kustomization's status")
	g.Expect(str(mustObject(g, kustomizationGVK, s.ns, "app"), "status", "lastAppliedRevision")).To(Equal("main@sha1:" + first))

	second := repo.Commit(t, "main", "v2", map[string]string{"deploy/app.yaml": configMapYAML("status-app", "v2")})
	g.Eventually(func() []testserver.GiteaStatus { return repo.Statuses(t, second) }, timeout).Should(ContainElement(applied),
		"the next commit gets its own status once applied")
	g.Expect(str(mustObject(g, configMapGVK, s.ns, "status-app"), "data", "version")).To(Equal("v2"))
	progressing := And(HaveField("Context", "kustomization/app/"+uid), HaveField("State", "pending"), HaveField("Description", "progressing"))
	g.Expect(repo.Statuses(t, first)).To(HaveExactElements(applied, progressing),
		"the first commit was pending, then applied, and nothing more (newest first)")
}
