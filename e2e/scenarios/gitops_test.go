package scenarios

import (
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The fleet repository of the GitOps loop: one .flux.yaml at the root (Flux v1's
// commandUpdated with kustomize), a base and one overlay per environment.
var fleetFiles = map[string]string{
	".flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
  updaters:
    - containerImage:
        command: kustomize edit set image "$FLUX_IMG:$FLUX_TAG"
`,
	"base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
`,
	"base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app:1.0.0
`,
	"staging/kustomization.yaml":    overlay("staging", 2),
	"production/kustomization.yaml": overlay("production", 3),
}

func overlay(env string, replicas int) string {
	return strings.NewReplacer("ENV", env, "COUNT", strconv.Itoa(replicas)).Replace(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: gitops
namePrefix: ENV-
labels:
  - pairs:
      env: ENV
    includeSelectors: true
resources:
  - ../base
replicas:
  - name: app
    count: COUNT
`)
}

const fleetSync = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
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
  name: staging
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./staging
  interval: 10m
  prune: true
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: production
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./production
  interval: 10m
  prune: true
`

// The GitOps loop: Git → GitRepository artifact → ManifestGeneration runs the .flux.yaml
// generators of each environment → Deployments; a commit changes staging; a ManifestUpdate
// writes a new image back to Git, which comes round the loop to staging only.
func TestScenarioGitOpsLoop(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "gitops")
	g := s.g
	s.gitSecret(s.ns, "git-credentials")
	repo, first := s.newRepo("fleet", fleetFiles)
	s.create(fleetSync, "__URL__", repo.HTTPURL())

	// Both environments are generated from the root .flux.yaml and applied.
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "fleet"), timeout).Should(Equal(
		"True|Succeeded|stored artifact for revision 'master@sha1:" + first + "'"))
	for _, env := range []string{"staging", "production"} {
		settled(g, manifestGenerationGVK, s.ns, env, Equal("True|ReconciliationSucceeded|Applied revision: master@sha1:"+first),
			func(g Gomega, mg *unstructured.Unstructured) {
				g.Expect(str(mg, "status", "lastAppliedRevision")).To(Equal("master@sha1:" + first))
				g.Expect(str(mg, "status", "configFile")).To(Equal(".flux.yaml"))
				g.Expect(inventory(mg)).To(Equal([]string{s.ns + "_" + env + "-app_apps_Deployment"}))
			})
	}
	g.Expect(deploymentOf(s.ns, "staging-app")(g)).To(Equal(deployment{Replicas: 2, Images: map[string]string{"app": "ghcr.io/example/app:1.0.0"}}))
	g.Expect(deploymentOf(s.ns, "production-app")(g)).To(Equal(deployment{Replicas: 3, Images: map[string]string{"app": "ghcr.io/example/app:1.0.0"}}))
	labels := mustObject(g, deploymentGVK, s.ns, "staging-app").GetLabels()
	g.Expect(labels).To(HaveKeyWithValue("generator.toolkit.fluxcd.io/name", "staging"))
	g.Expect(labels).To(HaveKeyWithValue("generator.toolkit.fluxcd.io/namespace", s.ns))

	// A commit scales staging: the GitRepository polls it (2s interval) and staging applies it.
	second := repo.Commit(t, "Scale staging to 4", map[string]string{"staging/kustomization.yaml": overlay("staging", 4)})
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "staging", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + second))
	g.Expect(deploymentOf(s.ns, "staging-app")(g).Replicas).To(Equal(int64(4)))
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "production", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + second))
	g.Expect(deploymentOf(s.ns, "production-app")(g).Replicas).To(Equal(int64(3)))

	// A ManifestUpdate releases a new image to staging through Git.
	s.create(`apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: app-1.1.0
spec:
  generationRef:
    name: staging
  workload: __NS__:deployment/staging-app
  containerImage:
    container: app
    image: ghcr.io/example/app:1.1.0
  git:
    author:
      name: Release Bot
      email: release@example.com
`)
	update := settled(g, manifestUpdateGVK, s.ns, "app-1.1.0", HavePrefix("True|Committed|committed "),
		func(g Gomega, obj *unstructured.Unstructured) {
			g.Expect(str(obj, "status", "commit")).To(MatchRegexp(`^[0-9a-f]{40}$`))
		})
	pushed := str(update, "status", "commit")
	g.Expect(condition(update, "Ready")).To(Equal("True|Committed|committed " + pushed + " to master"))

	// The commit is on the Git server, on top of the last one, by the author asked for,
	// changing staging's kustomization only.
	g.Expect(s.git(repo.Dir, "log", "-1", "--format=%H|%P|%an <%ae>|%s", "master")).To(Equal(
		pushed + "|" + second + "|Release Bot <release@example.com>|Update " + s.ns + ":deployment/staging-app container app to ghcr.io/example/app:1.1.0"))
	g.Expect(s.git(repo.Dir, "diff", "--name-only", second, pushed)).To(Equal("staging/kustomization.yaml"))
	g.Expect(s.git(repo.Dir, "show", pushed+":staging/kustomization.yaml")).To(ContainSubstring("newTag: 1.1.0"))

	// The ManifestUpdate asked the GitRepository for a reconcile, which fetched the commit.
	g.Eventually(func(g Gomega) string {
		repo := mustObject(g, gitRepositoryGVK, s.ns, "fleet")
		requested := repo.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
		g.Expect(requested).NotTo(BeEmpty(), "the ManifestUpdate annotates the GitRepository")
		g.Expect(str(repo, "status", "lastHandledReconcileAt")).To(Equal(requested))
		return str(repo, "status", "artifact", "revision")
	}, timeout).Should(Equal("master@sha1:" + pushed))

	// Staging runs the new image; production, generated from the same revision, does not.
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "staging", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + pushed))
	g.Expect(deploymentOf(s.ns, "staging-app")(g)).To(Equal(deployment{Replicas: 4, Images: map[string]string{"app": "ghcr.io/example/app:1.1.0"}}))
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "production", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + pushed))
	g.Expect(deploymentOf(s.ns, "production-app")(g)).To(Equal(deployment{Replicas: 3, Images: map[string]string{"app": "ghcr.io/example/app:1.0.0"}}))
}
