package build

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
)

const patchUpdatedFlux = `version: 1
patchUpdated:
  generators:
    - command: kustomize build .
  patchFile: flux-patch.yaml
`

// containerImages maps container names to images of a Deployment.
func containerImages(g *WithT, obj *unstructured.Unstructured) map[string]string {
	containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, c := range containers {
		m := c.(map[string]any)
		out[m["name"].(string)] = m["image"].(string)
	}
	return out
}

// The patch file is applied to the generators' output as a strategic merge patch (containers
// merge by name), and an entry whose resource is not generated any more is reported.
func TestBuildPatchUpdated(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	files := stagingLayout(patchUpdatedFlux)
	files["staging/flux-patch.yaml"] = `# maintained by the manifest-generator
apiVersion: apps/v1
kind: Deployment
metadata:
  name: staging-podinfo
  namespace: staging
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.6.0
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: staging-removed
  namespace: staging
spec:
  replicas: 3
`
	art := srv.publish(t, "r1", writeTree(t, files))
	b := newBuilder(t, Options{})

	res, err := b.Build(context.Background(), testOwner, art, specOf("staging"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ConfigFile).To(Equal(".flux.yaml"))
	g.Expect(res.CommandsRun).To(Equal(1))
	g.Expect(names(res.Objects)).To(ConsistOf("Deployment/staging/staging-podinfo", "Service/staging/staging-podinfo"))
	for _, o := range res.Objects {
		if o.GetKind() == "Deployment" {
			g.Expect(containerImages(g, o)).To(Equal(map[string]string{
				"podinfo": "ghcr.io/stefanprodan/podinfo:6.6.0",
				"sidecar": "envoyproxy/envoy:v1.30.0",
			}))
		}
	}
	g.Expect(res.Dropped).To(Equal([]patch.ID{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "staging", Name: "staging-removed"}}))

	// A cache hit reports the dropped entries too.
	res, err = b.Build(context.Background(), testOwner, art, specOf("staging"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.FromCache).To(BeTrue())
	g.Expect(res.Dropped).To(HaveLen(1))
}

// Until the first update there is no patch file: the output is applied as generated.
func TestBuildPatchUpdatedWithoutPatchFile(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, stagingLayout(patchUpdatedFlux)))
	b := newBuilder(t, Options{})

	res, err := b.Build(context.Background(), testOwner, art, specOf("staging"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(2))
	g.Expect(res.Dropped).To(BeEmpty())
}

// A malformed patch file is fixed by a new commit only.
func TestBuildPatchFileMalformed(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	files := stagingLayout(patchUpdatedFlux)
	files["staging/flux-patch.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: staging-podinfo\n---\n- just\n- a list\n"
	art := srv.publish(t, "r1", writeTree(t, files))
	b := newBuilder(t, Options{})

	_, err := b.Build(context.Background(), testOwner, art, specOf("staging"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(IsTerminal(err)).To(BeTrue())
	g.Expect(err.Error()).To(And(ContainSubstring("staging/flux-patch.yaml"), ContainSubstring("document 2"), ContainSubstring(".flux.yaml")))
}
