package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const automatedApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: __NS__
  annotations:
    fluxcd.io/automated: "true"
    fluxcd.io/tag.app: semver:^1
spec:
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
          image: __IMAGE__:1.0.0
`

const automatedSync = `apiVersion: source.toolkit.fluxcd.io/v1
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
  name: apps
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./apps
  interval: 10m
  automation:
    interval: 2s
    insecure: true
`

// Automated image releases, with no person in the loop: a tag pushed to the registry becomes a
// ManifestUpdate, a commit on the Git server, a new artifact, and the new image applied.
func TestScenarioAutomatedImageRelease(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "automation")
	g := s.g
	image := servers.Registry.Host() + "/automation/app"
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	servers.Registry.PushImage(t, "automation/app", "1.0.0", created)
	s.gitSecret(s.ns, "git-credentials")
	repo, first := s.newRepo("automation", map[string]string{
		"apps/app.yaml": strings.NewReplacer("__NS__", s.ns, "__IMAGE__", image).Replace(automatedApp),
	})
	s.create(automatedSync, "__URL__", repo.HTTPURL())
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "apps", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + first))
	g.Expect(deploymentOf(s.ns, "app")(g).Images).To(Equal(map[string]string{"app": image + ":1.0.0"}))

	servers.Registry.PushImage(t, "automation/app", "1.1.0", created.Add(time.Hour))

	// The release: a ManifestUpdate made by the controller, committed to the Git server.
	var release *unstructured.Unstructured
	g.Eventually(func(g Gomega) []unstructured.Unstructured {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(manifestUpdateGVK.GroupVersion().WithKind("ManifestUpdateList"))
		g.Expect(k8s().List(context.Background(), list, client.InNamespace(s.ns), client.MatchingLabels{"generator.toolkit.fluxcd.io/automated": "true"})).To(Succeed())
		if len(list.Items) > 0 {
			release = &list.Items[0]
		}
		return list.Items
	}, timeout).Should(HaveLen(1))
	update := settled(g, manifestUpdateGVK, s.ns, release.GetName(), HavePrefix("True|Committed|committed "), nil)
	pushed := str(update, "status", "commit")
	g.Expect(s.git(repo.Dir, "diff", "--name-only", first, pushed)).To(Equal("apps/app.yaml"))
	g.Expect(s.git(repo.Dir, "show", pushed+":apps/app.yaml")).To(ContainSubstring("image: " + image + ":1.1.0"))

	// Round the loop: fetched, applied.
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "apps", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + pushed))
	g.Eventually(func(g Gomega) map[string]string { return deploymentOf(s.ns, "app")(g).Images }, timeout).
		Should(Equal(map[string]string{"app": image + ":1.1.0"}))
	g.Expect(str(mustObject(g, manifestGenerationGVK, s.ns, "apps"), "status", "automation", "lastRelease", "image")).To(Equal(image + ":1.1.0"))
}
