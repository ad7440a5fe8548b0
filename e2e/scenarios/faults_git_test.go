package scenarios

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

const faultGitObjects = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 1s
  timeout: 10s
  url: __URL__
  secretRef:
    name: git-credentials
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: apps
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: app
  path: ./apps
  interval: 2s
  prune: true
`

// startProxy puts a proxy in front of a server for one scenario, stopped at its end.
func startProxy(t *testing.T, serverURL string) *harness.Proxy {
	t.Helper()
	p, err := harness.StartProxyFor(serverURL)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(p.Close)
	return p
}

// The Git server goes away and comes back (its port closed to the GitRepository, its open
// connections cut). Meanwhile the GitRepository says so in a Ready condition a user can act on
// (the URL, the refused connection), keeps its artifact in its status and on the artifact
// server, and the ManifestGeneration keeps what it applied. A commit pushed during the outage
// is fetched and applied once the server is back. Not parallel: the scenarios that run side by
// side time their controllers' reactions, which the retries of this one would delay.
func TestScenarioFaultGitServerGoesAwayAndComesBack(t *testing.T) {
	s := newScenario(t, "fault-git")
	g := s.g
	s.gitSecret(s.ns, "git-credentials")
	repo, rev := s.newRepo("fault-git", apps(3, "v1"))
	proxy := startProxy(t, servers.Git.HTTPURL())
	url := proxy.URL(repo.HTTPURL())
	s.create(faultGitObjects, "__URL__", url)

	source := settled(g, gitRepositoryGVK, s.ns, "app", Equal("True|Succeeded|stored artifact for revision 'master@sha1:"+rev+"'"), nil)
	artifactURL, digest := str(source, "status", "artifact", "url"), str(source, "status", "artifact", "digest")
	settled(g, manifestGenerationGVK, s.ns, "apps", Equal("True|ReconciliationSucceeded|Applied revision: master@sha1:"+rev), inventoryOf([]string{
		s.ns + "_cm-0__ConfigMap", s.ns + "_cm-1__ConfigMap", s.ns + "_cm-2__ConfigMap",
	}))

	proxy.Down()
	t.Logf("Git server gone")
	// A commit that cannot be fetched yet.
	next := repo.Commit(t, "Change cm-0, add cm-3", apps(4, "v2"))

	// Reported: Ready=False, naming the URL and why.
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "app"), timeout).Should(And(
		HavePrefix("False|GitOperationFailed|"), ContainSubstring(url), ContainSubstring("connection refused")))
	t.Logf("GitRepository: %s; ManifestGeneration: %s", readyOf(gitRepositoryGVK, s.ns, "app")(g), readyOf(manifestGenerationGVK, s.ns, "apps")(g))
	// Kept, for a few intervals of the source: the artifact in the status and on the server, and
	// what the ManifestGeneration applied.
	g.Consistently(func(g Gomega) {
		obj := mustObject(g, gitRepositoryGVK, s.ns, "app")
		g.Expect(condition(obj, "Ready")).To(HavePrefix("False|GitOperationFailed|"))
		g.Expect(str(obj, "status", "artifact", "revision")).To(Equal("master@sha1:" + rev))
		g.Expect(str(obj, "status", "artifact", "digest")).To(Equal(digest))
		got := httpGet(g, artifactURL)
		g.Expect(got.Status).To(Equal(200))
		g.Expect(got.Digest).To(Equal(digest))
		mg := mustObject(g, manifestGenerationGVK, s.ns, "apps")
		g.Expect(str(mg, "status", "lastAppliedRevision")).To(Equal("master@sha1:" + rev))
		g.Expect(inventory(mg)).To(HaveLen(3))
		g.Expect(labelled(g, s.ns, "generator.toolkit.fluxcd.io/name", "apps")).To(Equal([]string{"cm-0", "cm-1", "cm-2"}))
		g.Expect(mustObject(g, configMapGVK, s.ns, "cm-0").Object["data"]).To(Equal(map[string]any{"version": "v1"}))
	}, 4*time.Second, 500*time.Millisecond).Should(Succeed())

	// Back: the commit of the outage is fetched and applied, and the failure is gone.
	g.Expect(proxy.Up()).To(Succeed())
	t.Logf("Git server back")
	settled(g, gitRepositoryGVK, s.ns, "app", Equal("True|Succeeded|stored artifact for revision 'master@sha1:"+next+"'"), func(g Gomega, obj *unstructured.Unstructured) {
		g.Expect(condition(obj, "FetchFailed")).To(BeEmpty())
	})
	settled(g, manifestGenerationGVK, s.ns, "apps", Equal("True|ReconciliationSucceeded|Applied revision: master@sha1:"+next), func(g Gomega, obj *unstructured.Unstructured) {
		g.Expect(inventory(obj)).To(HaveLen(4))
	})
	g.Expect(labelled(g, s.ns, "generator.toolkit.fluxcd.io/name", "apps")).To(Equal([]string{"cm-0", "cm-1", "cm-2", "cm-3"}))
	g.Expect(mustObject(g, configMapGVK, s.ns, "cm-0").Object["data"]).To(Equal(map[string]any{"version": "v2"}))
}
