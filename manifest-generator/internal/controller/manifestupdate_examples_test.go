package controller

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The examples of docs/fluxyaml.md (Flux v1's .flux.yaml examples), each through the whole loop:
// the generation applies the generated workload, a ManifestUpdate commits a change to the Git
// server touching only the expected file, and the next artifact applies the change.

// deployment reads the Deployment ns/name the generation applied.
func deployment(g Gomega, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	return d
}

func containerImage(d *appsv1.Deployment, container string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

const exampleImageUpdate = `
metadata:
  name: podinfo-6-1
spec:
  generationRef:
    name: apps
  workload: __NS__:deployment/podinfo
  containerImage:
    container: app
    image: ghcr.io/stefanprodan/podinfo:6.1.0
`

// The kustomize commandUpdated example of docs/fluxyaml.md: `kustomize build .` generates, the containerImage
// and policy updaters edit flux-patch.yaml (a kustomize patch) with kubeyaml.
func TestManifestUpdateExampleKustomizeCommandUpdated(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, exampleRepository(t, "example-kustomize-command-updated"))
	f.publishHead(t)
	gen := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	g.Eventually(readyCondition(gen), timeout).Should(HavePrefix("True|"))
	g.Expect(containerImage(deployment(g, f.ns, "podinfo"), "app")).To(Equal("ghcr.io/stefanprodan/podinfo:6.0.1"), "the patch applies")

	key := f.createUpdate(t, exampleImageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/flux-patch.yaml")).To(ContainSubstring("image: ghcr.io/stefanprodan/podinfo:6.1.0"))

	policy := f.createUpdate(t, `
metadata:
  name: podinfo-automated
spec:
  generationRef:
    name: apps
  workload: __NS__:deployment/podinfo
  policies:
    - name: automated
      value: "true"
`)
	g.Eventually(updateReady(policy), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("3"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))

	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return containerImage(deployment(g, f.ns, "podinfo"), "app") }, timeout).
		Should(Equal("ghcr.io/stefanprodan/podinfo:6.1.0"))
	d := deployment(g, f.ns, "podinfo")
	g.Expect(d.Annotations).To(HaveKeyWithValue("fluxcd.io/automated", "true"))
	g.Expect(containerImage(d, "sidecar")).To(Equal("busybox:1.36"))
}

// The patchUpdated helm example of docs/fluxyaml.md: `helm template ../charts/mychart -f overrides.yaml`
// generates, the change is kept in flux-patch.yaml, created by the first update.
func TestManifestUpdateExampleHelmPatchUpdated(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, exampleRepository(t, "example-helm-patch-updated"))
	f.publishHead(t)
	gen := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	g.Eventually(readyCondition(gen), timeout).Should(HavePrefix("True|"))
	d := deployment(g, f.ns, "podinfo")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(containerImage(d, "app")).To(Equal("ghcr.io/stefanprodan/podinfo:6.0.0"))

	key := f.createUpdate(t, exampleImageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))

	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return containerImage(deployment(g, f.ns, "podinfo"), "app") }, timeout).
		Should(Equal("ghcr.io/stefanprodan/podinfo:6.1.0"))
	d = deployment(g, f.ns, "podinfo")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(containerImage(d, "sidecar")).To(Equal("busybox:1.36"))
}

// exampleRepository is the content of the Git repository of an example, kept as a tree under
// testdata/<name>: the files by slash-separated path, with __NS__ for the test's namespace.
// apps/kubeyaml of the kustomize example stands in for kubeyaml (the updater tool of
// docs/fluxyaml.md, not in the controller image): enough of `kubeyaml image` and `kubeyaml
// annotate` for its patch file, reading YAML documents on stdin and writing them to stdout with
// the change made to the named workload's document; `annotate KEY=` (an unset
// FLUX_POLICY_VALUE) removes the annotation.
func exampleRepository(t *testing.T, name string) map[string]string {
	t.Helper()
	root := filepath.Join("testdata", name)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
