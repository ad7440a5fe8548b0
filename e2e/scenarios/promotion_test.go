package scenarios

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const promotionManifests = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 2s
  url: __GIT__
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
    name: app
  path: ./staging
  interval: 10m
  prune: true
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: production
spec:
  default: closed
  interval: 1s
  promotion:
    from:
      - apiVersion: generator.toolkit.fluxcd.io/v1alpha1
        kind: ManifestGeneration
        name: staging
    soak: 10s
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: production
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: app
  path: ./production
  interval: 10m
  prune: true
  gates:
    refs: [production]
`

const promotionKustomization = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app-production
spec:
  interval: 2s
  url: __GIT__
  secretRef:
    name: git-credentials
  gates:
    refs: [production]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: production-flux
  annotations:
    gating.toolkit.fluxcd.io/gates: production
spec:
  interval: 1m
  path: ./production-flux
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: app-production
`

// Staging to production with the real source-controller: a commit is applied by staging's
// ManifestGeneration, soaks there, and only then do production's ManifestGeneration and a Flux
// Kustomization (Flux's kustomize-controller, whose GitRepository the same gate holds to the
// promoted commit) apply it. The next commit waits in production, while the first stays
// applied, until it has soaked in staging in turn.
func TestScenarioPromotionFromStaging(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "promotion")
	g := s.g
	kustomizeController(t)
	s.gitSecret(s.ns, "git-credentials")
	release := func(v string) map[string]string {
		return map[string]string{
			"staging/app.yaml":         configMapYAML("staging-app", v),
			"production/app.yaml":      configMapYAML("production-app", v),
			"production-flux/app.yaml": configMapYAML("production-flux-app", v),
		}
	}
	repo, c1 := s.newRepo("promotion-app", release("v1"))
	// Flux's CRD may have been installed a moment ago: the client learns of it on a retry.
	for _, doc := range strings.Split(promotionKustomization, "\n---\n") {
		obj := s.yamlObject(doc, "__GIT__", repo.HTTPURL())
		g.Eventually(func() error { return k8s().Create(context.Background(), obj.DeepCopy()) }, timeout).Should(Succeed())
	}
	s.create(promotionManifests, "__GIT__", repo.HTTPURL())
	version := func(name string) func(g Gomega) string {
		return func(g Gomega) string {
			if !exists(configMapGVK, s.ns, name)(g) {
				return ""
			}
			return str(mustObject(g, configMapGVK, s.ns, name), "data", "version")
		}
	}

	rev1 := "master@sha1:" + c1
	g.Eventually(version("staging-app"), timeout).Should(Equal("v1"))
	g.Eventually(strOf(gateGVK, s.ns, "production", "status", "promotion", "candidate"), timeout).Should(Equal(rev1))
	g.Expect(version("production-app")(g)).To(BeEmpty(), "production waits for the soak")
	g.Eventually(strOf(gateGVK, s.ns, "production", "status", "openedForRevision"), timeout).Should(Equal(rev1))
	g.Eventually(version("production-app"), timeout).Should(Equal("v1"))
	g.Eventually(version("production-flux-app"), timeout).Should(Equal("v1"))

	// The next commit: applied in staging at once, held in production until it has soaked.
	c2 := repo.Commit(t, "v2", release("v2"))
	rev2 := "master@sha1:" + c2
	g.Eventually(version("staging-app"), timeout).Should(Equal("v2"))
	g.Eventually(strOf(gateGVK, s.ns, "production", "status", "promotion", "candidate"), timeout).Should(Equal(rev2))
	g.Expect(strOf(gateGVK, s.ns, "production", "status", "openedForRevision")(g)).To(Equal(rev1))
	g.Eventually(conditionOf(manifestGenerationGVK, s.ns, "production", "Blocked"), timeout).Should(ContainSubstring(
		"revision '" + rev2 + "' waits for its own approval (gate '" + s.ns + "/production' is approved for revision '" + rev1 + "')"))
	g.Expect(version("production-app")(g)).To(Equal("v1"))
	g.Expect(version("production-flux-app")(g)).To(Equal("v1"))

	g.Eventually(strOf(gateGVK, s.ns, "production", "status", "openedForRevision"), timeout).Should(Equal(rev2))
	g.Eventually(version("production-app"), timeout).Should(Equal("v2"))
	g.Eventually(version("production-flux-app"), timeout).Should(Equal("v2"))
	g.Eventually(strOf(kustomizationGVK, s.ns, "production-flux", "status", "lastAppliedRevision"), timeout).Should(Equal(rev2))
}
