package builder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBuildDocExamples renders every example of the ResourceSet spec and
// checks the objects it implies, field by field and type by type.
func TestBuildDocExamples(t *testing.T) {
	cases := []struct {
		name string
		// dir holds the example under testdata/examples: inputs.yaml, resources.yaml,
		// resources-template.yaml (each only when the example has it) and want.yaml, the
		// objects it implies.
		dir    string
		common *CommonMetadata
	}{
		{name: "podinfo tenants", dir: "podinfo-tenants", common: &CommonMetadata{Labels: map[string]string{"app.kubernetes.io/name": "podinfo"}}},
		{name: "tenant RBAC", dir: "tenant-rbac"},
		{name: "shared source is applied once", dir: "shared-source-is-applied-once"},
		{name: "conditional exclusion", dir: "conditional-exclusion"},
		{name: "nested field via toYaml and nindent", dir: "nested-field-via-toyaml-and-nindent"},
		{name: "resourcesTemplate with range and if", dir: "resourcestemplate-with-range-and-if"},
		{name: "common metadata overrides template metadata", dir: "common-metadata-overrides-template-metadata", common: &CommonMetadata{
			Labels:      map[string]string{"app.kubernetes.io/name": "podinfo"},
			Annotations: map[string]string{"fluxcd.controlplane.io/prune": "disabled"},
		}},
		{name: "resources take precedence over resourcesTemplate duplicates", dir: "resources-take-precedence-over-resourcestemplate-duplicates"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			example := func(name string) string { return exampleFile(t, filepath.Join("testdata", "examples", tc.dir, name)) }
			tmpl, err := Parse(resourcesOf(t, example("resources.yaml")), example("resources-template.yaml"))
			g.Expect(err).NotTo(HaveOccurred())
			objects, err := tmpl.Build(t.Context(), inputsOf(t, example("inputs.yaml")), tc.common)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(contents(objects)).To(Equal(objectsOf(t, example("want.yaml"))))
		})
	}
}

// exampleFile is the content of a file of an example, "" when the example has none.
func exampleFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
