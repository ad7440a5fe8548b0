package main

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// apps renders one ConfigMap per input, showing where each value came from.
const apps = `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: apps
  namespace: default
spec:
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: static-tenant
    - kind: ResourceSetInputProvider
      selector:
        matchLabels:
          inputs: versions
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app-<< inputs.id >>
        namespace: default
      data:
        tenant: << get inputs "tenant" | default "none" | quote >>
        tag: << get inputs "tag" | default "none" | quote >>
        replicas: << get inputs "replicas" | default 1 | toString | quote >>
`

// providers has a Static provider with no status, which contributes its spec.defaultValues, and
// OCIArtifactTag providers with the status.exportedInputs the controller wrote, one of them
// labelled for apps' selector, one in another namespace with the same label.
const providers = `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: static-tenant
  namespace: default
spec:
  type: Static
  defaultValues:
    id: team1
    tenant: team1
    replicas: 2
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: podinfo-versions
  namespace: default
  labels:
    inputs: versions
spec:
  type: OCIArtifactTag
  url: oci://ghcr.io/stefanprodan/charts/podinfo
status:
  lastExportedRevision: sha256:0123
  exportedInputs:
    - id: "48956301"
      tag: 6.7.1
    - id: "48956302"
      tag: 6.7.0
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: elsewhere
  namespace: other
  labels:
    inputs: versions
spec:
  type: OCIArtifactTag
  url: oci://ghcr.io/stefanprodan/charts/podinfo
status:
  lastExportedRevision: sha256:4567
  exportedInputs:
    - id: "other"
      tag: 0.0.1
`

func TestBuildInputsFromProviders(t *testing.T) {
	g := NewWithT(t)
	res := build(t, "-f", writeFile(t, "apps.yaml", apps), "--inputs-from", writeFile(t, "providers.yaml", providers))
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stderr).To(BeEmpty())

	// Flatten, providers in name order: podinfo-versions' two inputs, then static-tenant's.
	objects := parseStream(t, res.stdout)
	g.Expect(names(objects)).To(Equal([]string{
		"ConfigMap/default/app-48956301", "ConfigMap/default/app-48956302", "ConfigMap/default/app-" + inputs.ID("static-tenant"),
	}))
	g.Expect(objects[0].Object["data"]).To(Equal(map[string]any{"tenant": "none", "tag": "6.7.1", "replicas": "1"}))
	g.Expect(objects[1].Object["data"]).To(Equal(map[string]any{"tenant": "none", "tag": "6.7.0", "replicas": "1"}))
	g.Expect(objects[2].Object["data"]).To(Equal(map[string]any{"tenant": "team1", "tag": "none", "replicas": "2"}))
}

// A Static provider gets the id of its name, as flux-operator's build gives (the controller's is
// the id of its UID); the Permute strategy nests each provider's inputs under its normalised name,
// in name order, and each combination's id is that of the indexes of its parts.
func TestBuildStaticProviderWithPermute(t *testing.T) {
	g := NewWithT(t)
	file := writeFile(t, "rset.yaml", `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: matrix
spec:
  inputStrategy:
    name: Permute
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: team-settings
    - kind: ResourceSetInputProvider
      name: podinfo-versions
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: matrix-<< inputs.id >>
        namespace: default
      data:
        settings-id: << inputs.team_settings.id | quote >>
        region: << inputs.team_settings.region | quote >>
        tag: << inputs.podinfo_versions.tag | quote >>
---
# Providers may also sit in the ResourceSet's file.
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: team-settings
spec:
  type: Static
  defaultValues:
    region: eu-west-1
`)
	res := build(t, "-f", file, "--inputs-from", writeFile(t, "providers.yaml", providers))
	g.Expect(res.exitCode).To(Equal(0))
	objects := parseStream(t, res.stdout)
	g.Expect(objects).To(HaveLen(2))
	var tags []any
	for i, o := range objects {
		data := o.Object["data"].(map[string]any)
		g.Expect(data["region"]).To(Equal("eu-west-1"))
		g.Expect(data["settings-id"]).To(Equal(inputs.ID("team-settings")))
		g.Expect(o.GetName()).To(Equal("matrix-" + inputs.ID(fmt.Sprintf("podinfo_versions=%d/team_settings=0", i))))
		tags = append(tags, data["tag"])
	}
	g.Expect(tags).To(Equal([]any{"6.7.1", "6.7.0"}))
}

// `kubectl get rsip -o yaml` prints a List: its items are providers too.
func TestBuildInputsFromAListOfProviders(t *testing.T) {
	g := NewWithT(t)
	list := `
apiVersion: v1
kind: List
items:
  - apiVersion: fluxcd.controlplane.io/v1
    kind: ResourceSetInputProvider
    metadata:
      name: static-tenant
      namespace: default
    spec:
      type: Static
      defaultValues:
        id: team1
        tenant: team1
  - apiVersion: fluxcd.controlplane.io/v1
    kind: ResourceSetInputProvider
    metadata:
      name: podinfo-versions
      namespace: default
      labels:
        inputs: versions
    spec:
      type: OCIArtifactTag
      url: oci://ghcr.io/stefanprodan/charts/podinfo
    status:
      lastExportedRevision: sha256:89ab
      exportedInputs: []
`
	res := build(t, "-f", writeFile(t, "apps.yaml", apps), "--inputs-from", writeFile(t, "list.yaml", list))
	g.Expect(res.exitCode).To(Equal(0))
	// podinfo-versions exported nothing: it adds no input, as in the controller.
	g.Expect(names(parseStream(t, res.stdout))).To(Equal([]string{"ConfigMap/default/app-" + inputs.ID("static-tenant")}))
}

// A selector that selects nothing is no error, as in the controller, but it is said.
func TestBuildSelectorWithoutProviderWarns(t *testing.T) {
	g := NewWithT(t)
	static := providers[:strings.Index(providers, "---")]
	res := build(t, "-f", writeFile(t, "apps.yaml", apps), "--inputs-from", writeFile(t, "providers.yaml", static))
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(names(parseStream(t, res.stdout))).To(Equal([]string{"ConfigMap/default/app-" + inputs.ID("static-tenant")}))
	g.Expect(res.stderr).To(HavePrefix("warning: ResourceSet 'default/apps': spec.inputsFrom[1].selector selects no provider in "))
}

func TestBuildProviderErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		inputsFrom string // providers file content; none when empty
		stderr     string
	}{
		{
			name:       "a provider named in inputsFrom and missing from the file",
			inputsFrom: "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata:\n  name: unrelated\nspec:\n  type: Static\n",
			stderr:     "error: ResourceSet 'default/apps': input provider 'default/static-tenant' not found in APPS, PROVIDERS\n",
		},
		{
			name:   "no --inputs-from",
			stderr: "error: ResourceSet 'default/apps' has spec.inputsFrom, please provide the inputs with --inputs-from or --inputs-from-provider",
		},
		{
			name: "a provider that needs its controller and has no status",
			inputsFrom: `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: static-tenant
spec:
  type: ExternalService
  url: https://example.com/inputs
`,
			stderr: "input provider 'default/static-tenant' (PROVIDERS, document 1) has no status.exportedInputs, and only the controller can fetch the inputs of type ExternalService: give its status, e.g. from `kubectl get rsip static-tenant -n default -o yaml`",
		},
		{
			name:       "a file without providers",
			inputsFrom: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
			stderr:     "error: no ResourceSetInputProvider (fluxcd.controlplane.io/v1) found in ",
		},
		{
			name:       "a provider defined twice",
			inputsFrom: providers + "---\n" + providers,
			stderr:     "ResourceSetInputProvider 'default/static-tenant' is already defined in ",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			appsFile := writeFile(t, "apps.yaml", apps)
			args := []string{"-f", appsFile}
			providersFile := ""
			if tc.inputsFrom != "" {
				providersFile = writeFile(t, "providers.yaml", tc.inputsFrom)
				args = append(args, "--inputs-from", providersFile)
			}
			res := build(t, args...)
			g.Expect(res.exitCode).To(Equal(1))
			g.Expect(res.stdout).To(BeEmpty())
			want := strings.NewReplacer("APPS", appsFile, "PROVIDERS", providersFile).Replace(tc.stderr)
			g.Expect(res.stderr).To(ContainSubstring(want))
		})
	}
}
