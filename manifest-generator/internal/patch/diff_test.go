package patch

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		change func(t *testing.T, u *unstructured.Unstructured)
		want   string // the entry as written to the patch file; "" for none
	}{
		{
			name: "Deployment image: a strategic merge patch naming one container",
			kind: "Deployment",
			change: func(t *testing.T, u *unstructured.Unstructured) {
				containers := nested(t, u, "spec", "template", "spec", "containers").([]any)
				containers[0].(map[string]any)["image"] = "app:1.1"
			},
			want: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: default
spec:
  template:
    spec:
      $setElementOrder/containers:
      - name: app
      - name: sidecar
      containers:
      - image: app:1.1
        name: app
`,
		},
		{
			name: "Deployment annotation, container removed, replicas changed",
			kind: "Deployment",
			change: func(t *testing.T, u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{"fluxcd.io/automated": "true"})
				spec := nested(t, u, "spec", "template", "spec").(map[string]any)
				spec["containers"] = spec["containers"].([]any)[:1]
				u.Object["spec"].(map[string]any)["replicas"] = int64(4)
			},
		},
		{
			name: "HelmRelease values: a JSON merge patch",
			kind: "HelmRelease",
			change: func(t *testing.T, u *unstructured.Unstructured) {
				nested(t, u, "spec", "values", "image").(map[string]any)["tag"] = "6.1.0"
			},
			want: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  values:
    image:
      tag: 6.1.0
`,
		},
		{
			name: "HelmRelease list replaced, key removed, annotation added",
			kind: "HelmRelease",
			change: func(t *testing.T, u *unstructured.Unstructured) {
				values := nested(t, u, "spec", "values").(map[string]any)
				values["hosts"] = []any{"c.example.com"}
				delete(values, "replicaCount")
				u.SetAnnotations(map[string]string{"fluxcd.io/locked": "true"})
			},
		},
		{
			name:   "no change, no patch",
			kind:   "Deployment",
			change: func(*testing.T, *unstructured.Unstructured) {},
			want:   "",
		},
		{
			name:   "no change to a custom resource, no patch",
			kind:   "HelmRelease",
			change: func(*testing.T, *unstructured.Unstructured) {},
			want:   "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gen := find(t, generated(t), tt.kind)
			updated := gen.DeepCopy()
			tt.change(t, updated)

			patch, err := Diff(gen, updated, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(patch).NotTo(BeNil())
			if len(patch) == 0 {
				g.Expect(tt.want).To(BeEmpty(), "a patch was expected")
				g.Expect(updated).To(Equal(gen))
				return
			}
			text, err := yaml.Marshal(patch)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want != "" {
				g.Expect(string(text)).To(Equal(tt.want))
			}
			g.Expect(patch).To(HaveKeyWithValue("apiVersion", gen.GetAPIVersion()))
			g.Expect(patch).To(HaveKeyWithValue("kind", gen.GetKind()))
			g.Expect(patch["metadata"]).To(HaveKeyWithValue("name", gen.GetName()))
			g.Expect(patch["metadata"]).To(HaveKeyWithValue("namespace", gen.GetNamespace()))

			// Round trip: applying the patch to the generated objects gives updated.
			patched, dropped, err := Apply(generated(t), text, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dropped).To(BeEmpty())
			g.Expect(find(t, patched, tt.kind).Object).To(Equal(updated.Object))
		})
	}
}
