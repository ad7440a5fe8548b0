package builder

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestBadInput checks that every way a ResourceSet can be wrong gives an
// error naming the entry (and the input, for rendering errors) and the cause.
func TestBadInput(t *testing.T) {
	const namespace = `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
`
	cases := []struct {
		name              string
		resources         string
		raw               [][]byte // instead of resources, for JSON that YAML cannot express
		resourcesTemplate string
		inputs            string
		parseErr          []string // substrings of the Parse error
		buildErr          []string // substrings of the Build error
	}{
		{
			name: "syntax error in resourcesTemplate gives the line",
			resourcesTemplate: `apiVersion: v1
kind: Namespace
metadata:
  name: << inputs.tenant
`,
			parseErr: []string{"template: resourcesTemplate:5: unclosed action started at resourcesTemplate:4"},
		},
		{
			name: "syntax error in a resources entry gives entry, path and line",
			resources: namespace + `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
  data:
    script: |
      line one
      << if inputs.x >>
`,
			parseErr: []string{"template: resources[1].data.script:3: unexpected EOF"},
		},
		{
			name: "unknown function",
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant | nope >>
`,
			parseErr: []string{"resources[0].metadata.name:1:", `function "nope" not defined`},
		},
		{
			name:              "unknown function in resourcesTemplate",
			resourcesTemplate: "kind: << shout inputs.tenant >>\n",
			parseErr:          []string{"template: resourcesTemplate:1:", `function "shout" not defined`},
		},
		{
			name:     "invalid JSON in a resources entry",
			raw:      [][]byte{[]byte(`{"apiVersion": "v1",`)},
			parseErr: []string{"resources[0]: invalid JSON"},
		},
		{
			name:     "empty resources entry",
			raw:      [][]byte{[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`), []byte(`null`)},
			parseErr: []string{"resources[1]: empty resource"},
		},
		{
			name: "missing input key",
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.nope >>
`,
			inputs:   `[{tenant: team1}]`,
			buildErr: []string{"inputs[0]:", "resources[0].metadata.name", `map has no entry for key "nope"`},
		},
		{
			name: "missing nested input key",
			resources: `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
  data:
    version: << inputs.app.nope | quote >>
`,
			inputs:   `[{app: {version: "1"}}, {app: {}}]`,
			buildErr: []string{"inputs[0]:", "resources[0].data.version", `map has no entry for key "nope"`},
		},
		{
			name:              "missing input key in resourcesTemplate",
			resourcesTemplate: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: << inputs.tenant >>\n  labels:\n    x: << inputs.nope >>\n",
			inputs:            `[{tenant: team1}]`,
			buildErr:          []string{"inputs[0]:", "resourcesTemplate:6:", `map has no entry for key "nope"`},
		},
		{
			name:     "resources entry that is a list",
			raw:      [][]byte{[]byte(`["<< inputs.tenant >>"]`)},
			inputs:   `[{tenant: team1}]`,
			buildErr: []string{"inputs[0]: resources[0]: not a Kubernetes object: rendered a list"},
		},
		{
			name:     "resources entry that renders a scalar",
			raw:      [][]byte{[]byte(`"<< inputs.tenant >>"`)},
			inputs:   `[{tenant: team1}]`,
			buildErr: []string{`inputs[0]: resources[0]: not a Kubernetes object: rendered a string "team1"`},
		},
		{
			name: "resources entry without kind",
			resources: `
- apiVersion: v1
  metadata:
    name: << inputs.tenant >>
`,
			inputs:   `[{tenant: team1}]`,
			buildErr: []string{"inputs[0]: resources[0]: not a Kubernetes object: kind is missing"},
		},
		{
			name: "name that renders empty",
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
`,
			inputs:   `[{tenant: team1}, {tenant: ""}]`,
			buildErr: []string{"inputs[1]: resources[0]: not a Kubernetes object: metadata.name is missing"},
		},
		{
			name: "name that renders a number",
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
`,
			inputs:   `[{tenant: 42}]`,
			buildErr: []string{"inputs[0]: resources[0]: not a Kubernetes object: metadata.name is a number 42, want a string"},
		},
		{
			name: "label value that is not a string",
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: ns
    labels:
      enabled: << inputs.enabled >>
`,
			inputs:   `[{enabled: true}]`,
			buildErr: []string{`inputs[0]: resources[0]: metadata.labels["enabled"] is a boolean true, want a string (use | quote)`},
		},
		{
			name:              "resourcesTemplate document that is a list",
			resourcesTemplate: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ok\n---\n- << inputs.tenant >>\n- b\n",
			inputs:            `[{tenant: team1}]`,
			buildErr:          []string{"inputs[0]: resourcesTemplate document #2: not a Kubernetes object: rendered a list"},
		},
		{
			name:              "resourcesTemplate document that is a scalar",
			resourcesTemplate: "just << inputs.tenant >>\n",
			inputs:            `[{tenant: team1}]`,
			buildErr:          []string{`inputs[0]: resourcesTemplate document #1: not a Kubernetes object: rendered a string "just team1"`},
		},
		{
			name:              "resourcesTemplate document without metadata",
			resourcesTemplate: "apiVersion: v1\nkind: Namespace\n",
			inputs:            `[{tenant: team1}]`,
			buildErr:          []string{"inputs[0]: resourcesTemplate document #1: not a Kubernetes object: metadata.name is missing"},
		},
		{
			name:              "resourcesTemplate renders invalid YAML",
			resourcesTemplate: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: << inputs.tenant >>\n",
			inputs:            `[{tenant: "a: b"}]`,
			buildErr:          []string{"inputs[0]: resourcesTemplate document #1: invalid YAML output:", "line 4"},
		},
		{
			name:              "resourcesTemplate with a bad document separator",
			resourcesTemplate: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n--- << inputs.tenant >>\n",
			inputs:            `[{tenant: team1}]`,
			buildErr:          []string{"inputs[0]: resourcesTemplate: invalid YAML output:", "invalid Yaml document separator"},
		},
		{
			name: "typed value renders invalid YAML",
			resources: `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
  data:
    value: << inputs.value >>
`,
			inputs:   `[{value: "[unclosed"}]`,
			buildErr: []string{`inputs[0]: resources[0].data.value: rendered value "[unclosed" is not valid YAML`},
		},
		{
			name: "function error",
			resources: `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
  data:
    enabled: << inputs.enabled | bool | quote >>
`,
			inputs:   `[{enabled: "maybe"}]`,
			buildErr: []string{"inputs[0]:", "resources[0].data.enabled", `cannot convert "maybe" to a boolean`},
		},
		{
			name: "templated keys that collide",
			resources: `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
  data:
    a: static
    << inputs.key >>: templated
`,
			inputs:   `[{key: a}]`,
			buildErr: []string{"inputs[0]: resources[0].data: duplicate key \"a\" after rendering"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			raw := tc.raw
			if raw == nil {
				raw = resourcesOf(t, tc.resources)
			}
			tmpl, err := Parse(raw, tc.resourcesTemplate)
			if tc.parseErr != nil {
				g.Expect(err).To(HaveOccurred())
				t.Log(err)
				for _, s := range tc.parseErr {
					g.Expect(err.Error()).To(ContainSubstring(s))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			objects, err := tmpl.Build(t.Context(), inputsOf(t, tc.inputs), nil)
			g.Expect(err).To(HaveOccurred())
			g.Expect(objects).To(BeNil())
			t.Log(err)
			for _, s := range tc.buildErr {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
}
