package main

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The podinfo example of the ResourceSet documentation renders the four objects the controller
// applies, with typed values, the common label and the owner labels.
func TestBuildPodinfoExample(t *testing.T) {
	g := NewWithT(t)
	res := build(t, "-f", "testdata/podinfo.yaml")
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stderr).To(BeEmpty())

	objects := parseStream(t, res.stdout)
	// flux-operator's order: each resources entry for every input.
	g.Expect(names(objects)).To(Equal([]string{
		"OCIRepository/default/podinfo-team1",
		"OCIRepository/default/podinfo-team2",
		"HelmRelease/default/podinfo-team1",
		"HelmRelease/default/podinfo-team2",
	}))
	g.Expect(strings.Count(res.stdout, "---\n")).To(Equal(4), "each document starts with ---")
	for _, o := range objects {
		g.Expect(o.GetLabels()).To(Equal(map[string]string{
			"app.kubernetes.io/name":                       "podinfo",
			"resourceset.fluxcd.controlplane.io/name":      "podinfo",
			"resourceset.fluxcd.controlplane.io/namespace": "default",
		}))
	}
	g.Expect(objects[2].Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("values", HaveKeyWithValue("replicaCount", int64(2)))))
	g.Expect(objects[3].Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("values", HaveKeyWithValue("replicaCount", int64(3)))))
	g.Expect(res.stdout).To(ContainSubstring("replicaCount: 2\n"), "an int, not a string")
	g.Expect(objects[0].Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("ref", HaveKeyWithValue("semver", "6.7.x"))))
	g.Expect(objects[3].Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("chartRef",
		Equal(map[string]any{"kind": "OCIRepository", "name": "podinfo-team2"}))))
}

func TestBuildReadsStdin(t *testing.T) {
	g := NewWithT(t)
	podinfo, err := os.ReadFile("testdata/podinfo.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	res := buildStdin(t, string(podinfo), "-f", "-")
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal(build(t, "-f", "testdata/podinfo.yaml").stdout))
}

// A file may hold several ResourceSets among other objects; each renders with its own owner
// labels, in file order, and one without a namespace is in -n's namespace.
func TestBuildSeveralResourceSets(t *testing.T) {
	g := NewWithT(t)
	file := writeFile(t, "sets.yaml", `
# a comment-only document is skipped
---
apiVersion: v1
kind: Namespace
metadata:
  name: apps
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: first
  namespace: apps
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: first
        namespace: apps
      data:
        plain: "no inputs: rendered once"
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: second
spec:
  inputs:
    - tenant: a
    - tenant: b
  resourcesTemplate: |
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: << inputs.tenant >>
      namespace: tenants
`)
	res := build(t, "-f", file, "-n", "tenants")
	g.Expect(res.exitCode).To(Equal(0))
	objects := parseStream(t, res.stdout)
	g.Expect(names(objects)).To(Equal([]string{"ConfigMap/apps/first", "ServiceAccount/tenants/a", "ServiceAccount/tenants/b"}))
	g.Expect(objects[0].GetLabels()).To(HaveKeyWithValue("resourceset.fluxcd.controlplane.io/namespace", "apps"))
	g.Expect(objects[1].GetLabels()).To(HaveKeyWithValue("resourceset.fluxcd.controlplane.io/name", "second"))
	g.Expect(objects[1].GetLabels()).To(HaveKeyWithValue("resourceset.fluxcd.controlplane.io/namespace", "tenants"))

	// Without -n nor a kubeconfig, the namespace is "default".
	res = build(t, "-f", file)
	g.Expect(parseStream(t, res.stdout)[1].GetLabels()).To(HaveKeyWithValue("resourceset.fluxcd.controlplane.io/namespace", "default"))
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		stderr []string
	}{
		{
			name: "a template syntax error gives the template and line",
			file: `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: broken
  namespace: default
spec:
  inputs:
    - tenant: a
  resourcesTemplate: |
    apiVersion: v1
    kind: Namespace
    metadata:
      name: << inputs.tenant
`,
			stderr: []string{"error: ResourceSet 'default/broken': build failed: template: resourcesTemplate:5: unclosed action started at resourcesTemplate:4"},
		},
		{
			name: "a missing input gives the entry and the input",
			file: `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: broken
spec:
  inputs:
    - tenant: a
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: << inputs.team >>
`,
			stderr: []string{"error: ResourceSet 'default/broken': build failed:", "resources[0].metadata.name", `"team"`},
		},
		{
			name: "an input left out by isolateInputFailures fails the build, named",
			file: `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: isolated
spec:
  isolateInputFailures: true
  inputs:
    - tenant: a
    - team: b
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: << inputs.tenant >>
`,
			stderr: []string{"error: ResourceSet 'default/isolated': build failed for 1 inputs, which the controller would leave out (spec.isolateInputFailures): inputs[1]: ",
				`"tenant"`},
		},
		{
			name:   "no ResourceSet",
			file:   "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n",
			stderr: []string{"error: no ResourceSet (fluxcd.controlplane.io/v1) found in "},
		},
		{
			name:   "a misspelt field",
			file:   "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: x\nspec:\n  inputFrom: []\n",
			stderr: []string{"document 1: ResourceSet:", `unknown field "inputFrom"`},
		},
		{
			name:   "an unsupported version",
			file:   "apiVersion: fluxcd.controlplane.io/v1beta1\nkind: ResourceSet\nmetadata:\n  name: x\n",
			stderr: []string{"document 1: ResourceSet fluxcd.controlplane.io/v1beta1 is not supported: use fluxcd.controlplane.io/v1"},
		},
		{
			name:   "invalid YAML names the document",
			file:   "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n---\nkind: [\n",
			stderr: []string{"document 2:"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := build(t, "-f", writeFile(t, "rset.yaml", tc.file))
			g.Expect(res.exitCode).To(Equal(1))
			g.Expect(res.stdout).To(BeEmpty())
			for _, s := range tc.stderr {
				g.Expect(res.stderr).To(ContainSubstring(s))
			}
		})
	}

	t.Run("a missing file", func(t *testing.T) {
		g := NewWithT(t)
		res := build(t, "-f", "testdata/nothing.yaml")
		g.Expect(res.exitCode).To(Equal(1))
		g.Expect(res.stderr).To(ContainSubstring("invalid filename 'testdata/nothing.yaml', must point to an existing file"))
	})

	t.Run("-f is required", func(t *testing.T) {
		g := NewWithT(t)
		res := build(t)
		g.Expect(res.exitCode).To(Equal(1))
		g.Expect(res.stderr).To(ContainSubstring("--filename is required"))
	})
}
