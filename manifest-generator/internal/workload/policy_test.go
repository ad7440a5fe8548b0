package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

func ptr(s string) *string { return &s }

func TestSetPolicy(t *testing.T) {
	const plain = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: foo\n"
	const annotated = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: foo\n  annotations:\n    team: a\n    fluxcd.io/automated: \"true\"\n"
	const legacy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: foo\n  annotations:\n    flux.weave.works/locked: \"true\"\n    filter.fluxcd.io/app: glob:1.*\n"
	tests := []struct {
		name     string
		manifest string
		policy   string
		value    *string
		changed  bool
		want     map[string]string // annotations afterwards
	}{
		{"add automated", plain, PolicyAutomated, ptr("true"), true, map[string]string{"fluxcd.io/automated": "true"}},
		{"add tag policy", plain, TagPolicy("app"), ptr("semver:~1.2"), true, map[string]string{"fluxcd.io/tag.app": "semver:~1.2"}},
		{"add locked next to others", annotated, PolicyLocked, ptr("true"), true, map[string]string{"team": "a", "fluxcd.io/automated": "true", "fluxcd.io/locked": "true"}},
		{"already set", annotated, PolicyAutomated, ptr("true"), false, map[string]string{"team": "a", "fluxcd.io/automated": "true"}},
		{"remove", annotated, PolicyAutomated, nil, true, map[string]string{"team": "a"}},
		{"empty value removes", annotated, PolicyAutomated, ptr(""), true, map[string]string{"team": "a"}},
		{"remove absent", plain, PolicyLocked, nil, false, nil},
		{"remove last drops the map", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    fluxcd.io/locked: \"true\"\n", PolicyLocked, nil, true, nil},
		{"full annotation key", plain, "fluxcd.io/ignore", ptr("true"), true, map[string]string{"fluxcd.io/ignore": "true"}},
		{"legacy prefix updated in place", legacy, PolicyLocked, ptr("false"), true, map[string]string{"flux.weave.works/locked": "false", "filter.fluxcd.io/app": "glob:1.*"}},
		{"filter prefix updated in place", legacy, TagPolicy("app"), ptr("glob:2.*"), true, map[string]string{"flux.weave.works/locked": "true", "filter.fluxcd.io/app": "glob:2.*"}},
		{"legacy removal", legacy, PolicyLocked, nil, true, map[string]string{"filter.fluxcd.io/app": "glob:1.*"}},
		{"filter removal", legacy, TagPolicy("app"), nil, true, map[string]string{"flux.weave.works/locked": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := object(t, tt.manifest)
			g.Expect(SetPolicy(u, tt.policy, tt.value)).To(Equal(tt.changed))
			g.Expect(u.GetAnnotations()).To(Equal(tt.want))
			if tt.want == nil {
				_, found := u.Object["metadata"].(map[string]any)["annotations"]
				g.Expect(found).To(BeFalse(), "empty annotations are removed")
			}

			node, err := kyaml.Parse(tt.manifest)
			g.Expect(err).NotTo(HaveOccurred())
			changed, err := SetPolicyNode(node, tt.policy, tt.value)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changed).To(Equal(tt.changed))
			fromNode := object(t, node.MustString())
			g.Expect(fromNode.Object).To(Equal(u.Object), node.MustString())
		})
	}
}

func TestPolicies(t *testing.T) {
	g := NewWithT(t)
	u := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: foo\n  annotations:\n    fluxcd.io/automated: \"true\"\n    flux.weave.works/automated: \"false\"\n    flux.weave.works/locked: \"true\"\n    filter.fluxcd.io/app: glob:1.*\n    fluxcd.io/tag.web: semver:~2\n    team: a\n")
	g.Expect(Policies(u)).To(Equal(map[string]string{
		"automated": "true",
		"locked":    "true",
		"tag.app":   "glob:1.*",
		"tag.web":   "semver:~2",
	}))
	g.Expect(PolicyAnnotation(PolicyAutomated)).To(Equal("fluxcd.io/automated"))
	g.Expect(PolicyAnnotation(TagPolicy("app"))).To(Equal("fluxcd.io/tag.app"))
}

// A policy value is one line: one with a line break is refused, the file unchanged (found by
// FuzzInFile: "\n" came back as "" through the edit of the file's lines).
func TestSetPolicyRefusesALineBreak(t *testing.T) {
	g := NewWithT(t)
	const file = "kind: Deployment\nmetadata:\n  name: app\n"
	out, changed, err := InFile([]byte(file), Ref{Kind: "Deployment", Name: "app"}, "default", func(n *kyaml.RNode) error {
		_, err := SetPolicyNode(n, TagPolicy("app"), ptr("glob:1.*\nsemver:2"))
		return err
	})
	g.Expect(err).To(MatchError(ContainSubstring("has a line break: policy values are one line")))
	g.Expect(changed).To(BeFalse())
	g.Expect(out).To(BeNil())
}
