package fluxyaml

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestReadRaw(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"apps/b.yaml": deploymentYAML + "---\n# a note\n---\nsome: config\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: podinfo\n  namespace: apps\n",
		"apps/a/list.yml": `apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: one}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}
`,
		"apps/c.json":              `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}`,
		"apps/package.json":        `{"name": "not-kubernetes", "version": "1.0.0"}`,
		"apps/values.yaml":         "replicas: 3\nimage: podinfo\n",
		"apps/list-of-things.yaml": "- a\n- b\n",
		"apps/kustomization.yaml":  "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [b.yaml]\n",
		"apps/.flux.yaml":          "version: 1\nscanForFiles: {}\n",
		"apps/.hidden.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden-file\n",
		"apps/.git/objects.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: in-git-dir\n",
		"apps/.github/ci.yaml":     "on: push\n",
		"apps/README.md":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: readme\n",
		"elsewhere/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside-target\n",
	})

	objs, err := ReadRawObjects(root, "./apps", Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	type seen struct {
		name, file  string
		index, item int
	}
	var got []seen
	for _, o := range objs {
		got = append(got, seen{objectName(o.Object), o.File, o.Index, o.Item})
	}
	g.Expect(got).To(Equal([]seen{
		{"ConfigMap/one", "apps/a/list.yml", 0, 0},
		{"ConfigMap/two", "apps/a/list.yml", 0, 1},
		{"Deployment.apps/podinfo", "apps/b.yaml", 0, -1},
		{"Service/apps/podinfo", "apps/b.yaml", 3, -1},
		{"Namespace/apps", "apps/c.json", 0, -1},
	}))

	plain, err := ReadRaw(root, "apps", Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain).To(HaveLen(5))

	all, err := ReadRaw(root, "", Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(6))
}

func TestReadRawErrors(t *testing.T) {
	t.Run("duplicates name both files", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, map[string]string{
			"a.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			"sub/b.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cm\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		})
		_, err := ReadRawObjects(root, ".", Limits{})
		var me *ManifestError
		g.Expect(errors.As(err, &me)).To(BeTrue())
		g.Expect(err.Error()).To(Equal("duplicate object ConfigMap/cm: in a.yaml (document 1) and in sub/b.yaml (document 2)"))
	})
	t.Run("broken YAML names the file", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, map[string]string{"x/bad.yaml": "apiVersion: v1\nkind: [\n"})
		_, err := ReadRawObjects(root, "x", Limits{})
		g.Expect(err).To(MatchError(HavePrefix("file x/bad.yaml is not valid: document 1: ")))
	})
	t.Run("Kubernetes object without a name", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {}\n"})
		_, err := ReadRawObjects(root, ".", Limits{})
		g.Expect(err).To(MatchError("file cm.yaml is not valid: document 1: missing metadata.name"))
	})
	t.Run("symlinked file out of the root", func(t *testing.T) {
		g := NewWithT(t)
		outside := t.TempDir()
		writeTree(t, outside, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\n"})
		root := t.TempDir()
		writeTree(t, root, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"})
		g.Expect(os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "apps", "link.yaml"))).To(Succeed())
		_, err := ReadRawObjects(root, "apps", Limits{})
		g.Expect(err).To(MatchError(ContainSubstring("escapes")))
	})
	t.Run("symlinks inside the root", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, map[string]string{
			"shared/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
			"apps/own.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n",
		})
		g.Expect(os.Symlink("../shared/cm.yaml", filepath.Join(root, "apps", "cm.yaml"))).To(Succeed())
		g.Expect(os.Symlink("../shared", filepath.Join(root, "apps", "dir"))).To(Succeed())
		objs, err := ReadRaw(root, "apps", Limits{})
		g.Expect(err).NotTo(HaveOccurred())
		// The linked file is read; the linked directory is not followed.
		g.Expect(objs).To(HaveLen(2))
		g.Expect(objs[0].GetName()).To(Equal("shared"))
	})
	t.Run("target outside the root", func(t *testing.T) {
		g := NewWithT(t)
		_, err := ReadRaw(t.TempDir(), "../..", Limits{})
		g.Expect(err).To(MatchError(ContainSubstring("outside the artifact root")))
	})
}
