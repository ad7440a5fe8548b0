package patch

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name        string
		patchFile   string
		check       func(g *WithT, patched []*unstructured.Unstructured)
		wantDropped []ID
	}{
		{
			name: "strategic merge on a Deployment merges containers by name",
			patchFile: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: default
  annotations:
    fluxcd.io/automated: "true"
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:1.1
`,
			check: func(g *WithT, patched []*unstructured.Unstructured) {
				d := find(t, patched, "Deployment")
				g.Expect(nested(t, d, "spec", "template", "spec", "containers")).To(Equal([]any{
					map[string]any{"name": "app", "image": "app:1.1", "ports": []any{map[string]any{"containerPort": int64(8080)}}},
					map[string]any{"name": "sidecar", "image": "proxy:2.0"},
				}))
				g.Expect(d.GetAnnotations()).To(Equal(map[string]string{"fluxcd.io/automated": "true"}))
				g.Expect(d.GetLabels()).To(Equal(map[string]string{"app": "app"}))
				g.Expect(nested(t, d, "spec", "replicas")).To(Equal(int64(1)))
			},
		},
		{
			name: "JSON merge on a custom resource replaces lists and deletes nulls",
			patchFile: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  values:
    image:
      tag: 6.1.0
    hosts: [c.example.com]
    replicaCount: null
`,
			check: func(g *WithT, patched []*unstructured.Unstructured) {
				hr := find(t, patched, "HelmRelease")
				g.Expect(nested(t, hr, "spec", "values")).To(Equal(map[string]any{
					"image": map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.1.0"},
					"hosts": []any{"c.example.com"},
				}))
				g.Expect(nested(t, hr, "spec", "chart", "spec", "version")).To(Equal("6.x"))
			},
		},
		{
			name: "entries for missing resources are dropped, the others apply",
			patchFile: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: gone
  namespace: default
spec:
  replicas: 3
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: other
spec:
  replicas: 3
---
apiVersion: v1
kind: Service
metadata:
  name: app
  namespace: default
  labels:
    patched: "yes"
`,
			check: func(g *WithT, patched []*unstructured.Unstructured) {
				g.Expect(find(t, patched, "Service").GetLabels()).To(Equal(map[string]string{"patched": "yes"}))
				g.Expect(nested(t, find(t, patched, "Deployment"), "spec", "replicas")).To(Equal(int64(1)))
			},
			wantDropped: []ID{
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "gone"},
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other", Name: "app"},
			},
		},
		{
			name: "an entry written for another version of the group applies to the generated version",
			patchFile: `# written when the chart rendered apps/v1beta2
apiVersion: apps/v1beta2
kind: Deployment
metadata:
  name: app
  namespace: default
spec:
  replicas: 3
`,
			check: func(g *WithT, patched []*unstructured.Unstructured) {
				d := find(t, patched, "Deployment")
				g.Expect(d.GetAPIVersion()).To(Equal("apps/v1"))
				g.Expect(nested(t, d, "spec", "replicas")).To(Equal(int64(3)))
			},
		},
		{
			name:      "empty and comment-only patch files change nothing",
			patchFile: "# managed by sluice\n---\n\n",
			check: func(g *WithT, patched []*unstructured.Unstructured) {
				g.Expect(patched).To(Equal(generated(t)))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gen := generated(t)
			patched, dropped, err := Apply(gen, []byte(tt.patchFile), nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(patched).To(HaveLen(len(gen)))
			for i := range gen {
				g.Expect(IDOf(patched[i])).To(Equal(IDOf(gen[i])), "order and identity are kept")
			}
			tt.check(g, patched)
			g.Expect(dropped).To(Equal(tt.wantDropped))
			g.Expect(gen).To(Equal(generated(t)), "generated is not modified")
		})
	}
}

func TestApplyMalformed(t *testing.T) {
	const service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: default\n"
	tests := []struct {
		name, patchFile, wantErr string
	}{
		{"YAML syntax", service + "---\nkind: [unclosed\n", "patch file document 2: "},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: app\n", "patch file document 1: the patch must name its resource: kind missing"},
		{"no identity", "spec:\n  replicas: 1\n", "patch file document 1: the patch must name its resource: apiVersion, kind, metadata.name missing"},
		{"not a mapping", service + "---\n- a\n- b\n", "patch file document 2: not a YAML mapping"},
		{"bad apiVersion", "apiVersion: a/b/c\nkind: Service\nmetadata:\n  name: app\n", "patch file document 1: "},
		{"twice the same resource", service + "---\n" + service, "patch file documents 1 and 2 both patch v1 Service default/app"},
		{"bad separator", service + "--- x\n" + service, "patch file document 1: invalid Yaml document separator: x"},
		{"patch that does not fit the schema", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n      - image: x\n", "patch file document 1 (apps/v1 Deployment default/app): map: map[image:x] does not contain declared merge key: name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			patched, dropped, err := Apply(generated(t), []byte(tt.patchFile), nil)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix(tt.wantErr))
			g.Expect(patched).To(BeNil())
			g.Expect(dropped).To(BeNil())
		})
	}
}
