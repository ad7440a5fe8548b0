package update

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

func deployment(name, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "apps"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": image}},
		}}},
	}}
}

// verify accepts exactly the requested change and names, without values, what else changed.
func TestVerify(t *testing.T) {
	ref := workload.Ref{Namespace: "apps", Kind: "Deployment", Name: "web"}
	want := deployment("web", "app:2")
	for _, tc := range []struct {
		name          string
		before, after []*unstructured.Unstructured
		problem       string // "" when the change verifies
	}{
		{"exactly the change",
			[]*unstructured.Unstructured{deployment("web", "app:1"), deployment("db", "db:1")},
			[]*unstructured.Unstructured{deployment("web", "app:2"), deployment("db", "db:1")}, ""},
		{"change missing",
			[]*unstructured.Unstructured{deployment("web", "app:1")},
			[]*unstructured.Unstructured{deployment("web", "app:1")}, "the requested change of apps:deployment/web is missing"},
		{"another object changed",
			[]*unstructured.Unstructured{deployment("web", "app:1"), deployment("db", "db:1")},
			[]*unstructured.Unstructured{deployment("web", "app:2"), deployment("db", "db:2")},
			"Deployment apps/db changed (spec.template.spec.containers[0].image)"},
		{"workload changed otherwise",
			[]*unstructured.Unstructured{deployment("web", "app:1")},
			[]*unstructured.Unstructured{deployment("web", "app:3")},
			"apps:deployment/web changed in other ways than requested (spec.template.spec.containers[0].image)"},
		{"object added",
			[]*unstructured.Unstructured{deployment("web", "app:1")},
			[]*unstructured.Unstructured{deployment("web", "app:2"), deployment("db", "db:1")}, "Deployment apps/db was added"},
		{"object removed",
			[]*unstructured.Unstructured{deployment("web", "app:1"), deployment("db", "db:1")},
			[]*unstructured.Unstructured{deployment("web", "app:2")}, "Deployment apps/db was removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := verify(tc.before, tc.after, []wanted{{ref: ref, object: want}}, "apps")
			if tc.problem == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.problem)))
			e, ok := asError(err)
			g.Expect(ok).To(BeTrue())
			g.Expect(e.Reason).To(Equal(generatorv1.VerificationFailedReason))
			g.Expect(e.Terminal).To(BeTrue())
		})
	}
}

// diffPaths names at most maxDiffPaths fields.
func TestDiffPathsBounded(t *testing.T) {
	g := NewWithT(t)
	want, got := map[string]any{}, map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		want[k], got[k] = 1, 2
	}
	g.Expect(diffPaths("", want, got)).To(Equal([]string{"a", "b", "c", "d", "e", "…"}))
	g.Expect(diffPaths("", want, "x")).To(Equal([]string{"the whole object"}))
}
