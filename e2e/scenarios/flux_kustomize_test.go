package scenarios

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

var (
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	bucketGVK        = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "Bucket"}
)

const fluxKustomizations = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 2s
  url: __GIT__
  secretRef:
    name: git-credentials
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata:
  name: app
spec:
  interval: 2s
  bucketName: manifests
  endpoint: __S3__
  insecure: true
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: app
spec:
  interval: 2s
  url: oci://__REGISTRY__/kustomize-consumer/app
  insecure: true
  ref:
    tag: v1
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: from-git
spec:
  interval: 1m
  path: ./deploy
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: app
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: from-bucket
spec:
  interval: 1m
  path: ./
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: Bucket
    name: app
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: from-oci
spec:
  interval: 1m
  path: ./
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: OCIRepository
    name: app
`

// Flux's own kustomize-controller (built by `make tools` from the module proxy) runs against
// the source-controller: it starts (it watches Buckets), and Kustomizations from a
// GitRepository, a Bucket and an OCIRepository apply our artifacts and are Ready at our
// revisions; a new commit comes round to it.
func TestScenarioFluxKustomizeController(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "flux-kustomize")
	g := s.g
	kustomizeController(t) // it starts against our CRDs

	s.gitSecret(s.ns, "git-credentials")
	repo, sha := s.newRepo("kustomize-consumer", map[string]string{"deploy/app.yaml": configMapYAML("from-git", "v1")})
	s3 := testserver.NewS3(t, testserver.S3Options{})
	s3.Put(t, "manifests", "app.yaml", configMapYAML("from-bucket", "v1"))
	ociDigest := servers.Registry.PushArtifact(t, "kustomize-consumer/app:v1", map[string]string{"app.yaml": configMapYAML("from-oci", "v1")}, nil)
	s.create(fluxKustomizations, "__GIT__", repo.HTTPURL(), "__S3__", s3.Endpoint(), "__REGISTRY__", servers.Registry.Host())

	for _, k := range []struct {
		name      string
		source    schema.GroupVersionKind
		configMap string
	}{
		{"from-git", gitRepositoryGVK, "from-git"},
		{"from-bucket", bucketGVK, "from-bucket"},
		{"from-oci", ociRepositoryGVK, "from-oci"},
	} {
		revision := ""
		g.Eventually(func(g Gomega) string {
			revision = str(mustObject(g, k.source, s.ns, "app"), "status", "artifact", "revision")
			return revision
		}, timeout).ShouldNot(BeEmpty(), "%s app has an artifact", k.source.Kind)
		settled(g, kustomizationGVK, s.ns, k.name, HavePrefix("True|ReconciliationSucceeded|Applied revision: "+revision),
			func(g Gomega, obj *unstructured.Unstructured) {
				g.Expect(str(obj, "status", "lastAppliedRevision")).To(Equal(revision))
			})
		g.Expect(str(mustObject(g, configMapGVK, s.ns, k.configMap), "data", "version")).To(Equal("v1"))
	}
	g.Expect(str(mustObject(g, gitRepositoryGVK, s.ns, "app"), "status", "artifact", "revision")).To(Equal("master@sha1:" + sha))
	g.Expect(str(mustObject(g, ociRepositoryGVK, s.ns, "app"), "status", "artifact", "revision")).To(Equal("v1@" + ociDigest))

	// A new commit: fetched by the source-controller, applied by Flux's controller.
	second := repo.Commit(t, "v2", map[string]string{"deploy/app.yaml": configMapYAML("from-git", "v2")})
	settled(g, kustomizationGVK, s.ns, "from-git", Equal("True|ReconciliationSucceeded|Applied revision: master@sha1:"+second), nil)
	g.Expect(str(mustObject(g, configMapGVK, s.ns, "from-git"), "data", "version")).To(Equal("v2"))
	// A changed object in the bucket likewise.
	s3.Put(t, "manifests", "app.yaml", configMapYAML("from-bucket", "v2"))
	g.Eventually(func(g Gomega) string { return str(mustObject(g, configMapGVK, s.ns, "from-bucket"), "data", "version") }, timeout).
		Should(Equal("v2"))
}
