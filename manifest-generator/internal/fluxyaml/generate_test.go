package fluxyaml

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 2
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.5.0
`

// helmChart is a minimal chart in Helm's own layout.
var helmChart = map[string]string{
	"charts/mychart/Chart.yaml":  "apiVersion: v2\nname: mychart\nversion: 0.1.0\n",
	"charts/mychart/values.yaml": "greeting: hello\nreplicas: 1\n",
	"charts/mychart/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
`,
	"charts/mychart/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  ports:
    - port: 80
`,
}

// generate finds, parses and runs the .flux.yaml for target, as the
// controller does.
func generate(t *testing.T, r Executor, root, target string) ([]Generated, error) {
	t.Helper()
	configPath, found, err := Find(root, target)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no %s for %s", FileName, target)
	}
	data, err := os.ReadFile(filepath.Join(root, configPath))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, configPath)
	if err != nil {
		t.Fatal(err)
	}
	return GenerateObjects(context.Background(), r, root, target, configPath, cfg, Limits{})
}

func names(objs []Generated) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = objectName(o.Object)
	}
	return out
}

// TestGenerateKustomizeStagingLayout is docs/fluxyaml.md's --git-path=staging
// example: .flux.yaml at the root, run with staging as working directory.
func TestGenerateKustomizeStagingLayout(t *testing.T) {
	requireTool(t, "kustomize")
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
`,
		"staging/kustomization.yaml":    "namespace: staging\nnamePrefix: staging-\nresources:\n  - deployment.yaml\n",
		"staging/deployment.yaml":       deploymentYAML,
		"production/kustomization.yaml": "namespace: production\nresources:\n  - deployment.yaml\n",
		"production/deployment.yaml":    deploymentYAML,
	})

	objs, err := generate(t, toolRunner(t), root, "staging")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{"Deployment.apps/staging/staging-podinfo"}))
	g.Expect(objs[0].Command).To(Equal("kustomize build ."))
	g.Expect(objs[0].Generator).To(Equal(0))
	replicas, _, _ := unstructured.NestedInt64(objs[0].Object.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(2)))

	objs, err = generate(t, toolRunner(t), root, "production")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{"Deployment.apps/production/podinfo"}))
}

func TestGenerateHelmTemplatePatchUpdated(t *testing.T) {
	requireTool(t, "helm")
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, helmChart)
	writeTree(t, root, map[string]string{
		"app/.flux.yaml": `version: 1
patchUpdated:
  generators:
    - command: helm template ../charts/mychart -f overrides.yaml
  patchFile: flux-patch.yaml
`,
		"app/overrides.yaml": "greeting: bonjour\n",
		// The patch is applied elsewhere: Generate returns what helm printed.
		"app/flux-patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-name-greeting\ndata:\n  greeting: patched\n",
	})

	objs, err := generate(t, toolRunner(t), root, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(ConsistOf("ConfigMap/release-name-greeting", "Service/release-name-svc"))
	for _, o := range objs {
		if o.Object.GetKind() == "ConfigMap" {
			v, _, _ := unstructured.NestedString(o.Object.Object, "data", "greeting")
			g.Expect(v).To(Equal("bonjour"))
		}
	}
}

func TestGenerateMergesGeneratorsInOrder(t *testing.T) {
	requireTool(t, "kustomize")
	requireTool(t, "helm")
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, helmChart)
	writeTree(t, root, map[string]string{
		".flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
    - command: helm template ../charts/mychart -f overrides.yaml
    - command: >-
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-%s\n' "$(basename "$PWD")"
`,
		"staging/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"staging/deployment.yaml":    deploymentYAML,
		"staging/overrides.yaml":     "greeting: hi\n",
	})

	objs, err := generate(t, toolRunner(t), root, "staging")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{
		"Deployment.apps/podinfo",
		"ConfigMap/release-name-greeting",
		"Service/release-name-svc",
		"ConfigMap/from-staging",
	}))
	g.Expect([]int{objs[0].Generator, objs[1].Generator, objs[2].Generator, objs[3].Generator}).To(Equal([]int{0, 1, 1, 2}))

	plain, err := Generate(context.Background(), toolRunner(t), root, "staging", ".flux.yaml", mustParse(t, root, ".flux.yaml"), Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain).To(HaveLen(4))
}

func mustParse(t *testing.T, root, configPath string) *Config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, configPath))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, configPath)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// commandConfig is a commandUpdated config with the given generators.
func commandConfig(commands ...string) *Config {
	cfg := &Config{Version: 1, CommandUpdated: &CommandUpdated{}}
	for _, c := range commands {
		cfg.CommandUpdated.Generators = append(cfg.CommandUpdated.Generators, Command{Command: c})
	}
	return cfg
}

func TestGenerateDocuments(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"list.yaml": `apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: one}
  - apiVersion: v1
    kind: Secret
    metadata: {name: two, namespace: apps}
`,
		"typed-list.yaml": `apiVersion: v1
kind: ConfigMapList
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: three}}
`,
		"empty-docs.yaml": "---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: four\n---\n\n",
		"stream.json":     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j1"}}` + "\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j2"}}` + "\n",
		"cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
		"cm-ns.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: other\n",
		"noname.yaml":     "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n",
		"nokind.yaml":     "apiVersion: v1\nmetadata:\n  name: x\n",
		"badapi.yaml":     "apiVersion: a/b/c\nkind: X\nmetadata:\n  name: x\n",
		"badlist.yaml":    "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n  - just a string\n",
	})
	run := func(commands ...string) ([]Generated, error) {
		return GenerateObjects(context.Background(), shell{}, root, ".", ".flux.yaml", commandConfig(commands...), Limits{})
	}

	t.Run("List expansion", func(t *testing.T) {
		g := NewWithT(t)
		objs, err := run("cat list.yaml", "cat typed-list.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names(objs)).To(Equal([]string{"ConfigMap/one", "Secret/apps/two", "ConfigMap/three"}))
		g.Expect([]int{objs[0].Item, objs[1].Item, objs[2].Item}).To(Equal([]int{0, 1, 0}))
	})
	t.Run("empty documents skipped", func(t *testing.T) {
		g := NewWithT(t)
		objs, err := run("cat empty-docs.yaml", "true")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names(objs)).To(Equal([]string{"ConfigMap/four"}))
		g.Expect(objs[0].Item).To(Equal(-1))
	})
	t.Run("JSON stream", func(t *testing.T) {
		g := NewWithT(t)
		objs, err := run("cat stream.json")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names(objs)).To(Equal([]string{"ConfigMap/j1", "ConfigMap/j2"}))
	})
	t.Run("same name in another namespace is no duplicate", func(t *testing.T) {
		g := NewWithT(t)
		objs, err := run("cat cm.yaml", "cat cm-ns.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objs).To(HaveLen(2))
	})
	t.Run("duplicates across generators are named", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat list.yaml", "cat cm.yaml")
		var me *ManifestError
		g.Expect(errors.As(err, &me)).To(BeTrue())
		g.Expect(err.Error()).To(Equal(`duplicate object ConfigMap/one: generated by "cat list.yaml" (generator 1, document 1, item 1) and generated by "cat cm.yaml" (generator 2, document 1)`))
	})
	t.Run("duplicates within one generator", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat cm.yaml; echo ---; cat cm.yaml")
		g.Expect(err).To(MatchError(`duplicate object ConfigMap/one: generated by "cat cm.yaml; echo ---; cat cm.yaml" (generator 1, document 1) and generated by "cat cm.yaml; echo ---; cat cm.yaml" (generator 1, document 2)`))
	})
	t.Run("duplicate keys", func(t *testing.T) {
		g := NewWithT(t)
		// Two files without a separator make one document with repeated keys.
		_, err := run("cat cm.yaml cm-ns.yaml")
		g.Expect(err).To(MatchError(And(
			HavePrefix(`generator "cat cm.yaml cm-ns.yaml" of .flux.yaml printed output that is not valid YAML or JSON: document 1: `),
			ContainSubstring(`already set in map`))))
		_, err = run(`echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"}}'`)
		g.Expect(err).To(MatchError(ContainSubstring(`duplicate field "metadata.name"`)))
	})
	t.Run("output that is not YAML", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("echo 'key: [unclosed'")
		var me *ManifestError
		g.Expect(errors.As(err, &me)).To(BeTrue())
		g.Expect(err.Error()).To(HavePrefix(`generator "echo 'key: [unclosed'" of .flux.yaml printed output that is not valid YAML or JSON: document 1: `))
	})
	t.Run("a document that is not an object", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat cm.yaml; echo ---; echo hello world")
		g.Expect(err).To(MatchError(`generator "cat cm.yaml; echo ---; echo hello world" of .flux.yaml printed a document that is not a Kubernetes object: document 2: a string, not a mapping`))
	})
	t.Run("an object without a name", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat noname.yaml")
		g.Expect(err).To(MatchError(`generator "cat noname.yaml" of .flux.yaml printed a document that is not a Kubernetes object: document 2: missing metadata.name`))
	})
	t.Run("an object without a kind", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat nokind.yaml")
		g.Expect(err).To(MatchError(ContainSubstring("document 1: missing kind")))
	})
	t.Run("an invalid apiVersion", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat badapi.yaml")
		g.Expect(err).To(MatchError(ContainSubstring(`document 1: invalid apiVersion "a/b/c"`)))
	})
	t.Run("a bad List item", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat badlist.yaml")
		g.Expect(err).To(MatchError(ContainSubstring("document 1, item 2: a string, not a mapping")))
	})
	t.Run("a failing generator stops the run", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run("cat cm.yaml", "echo 'Error: no such chart' >&2; exit 1", "touch should-not-run")
		var ce *CommandError
		g.Expect(errors.As(err, &ce)).To(BeTrue())
		g.Expect(err.Error()).To(Equal(`generator "echo 'Error: no such chart' >&2; exit 1" of .flux.yaml failed (exit status 1): Error: no such chart`))
		g.Expect(filepath.Join(root, "should-not-run")).NotTo(BeAnExistingFile())
	})
}

func TestGenerateKustomizeFailure(t *testing.T) {
	requireTool(t, "kustomize")
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".flux.yaml":         "version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n",
		"staging/readme.txt": "no kustomization here",
	})
	_, err := generate(t, toolRunner(t), root, "staging")
	var ce *CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(err.Error()).To(HavePrefix(`generator "kustomize build ." of .flux.yaml failed (exit status 1): `))
	g.Expect(ce.Stderr).To(ContainSubstring("kustomization"))
}

func TestGenerateScanForFiles(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".flux.yaml":            "version: 1\ncommandUpdated:\n  generators:\n    - command: exit 1\n",
		"raw/.flux.yaml":        "version: 1\nscanForFiles: {}\n",
		"raw/deployment.yaml":   deploymentYAML,
		"raw/values/other.yaml": "replicas: 3\n",
	})
	objs, err := generate(t, shell{}, root, "raw")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{"Deployment.apps/podinfo"}))
	g.Expect(objs[0].File).To(Equal("raw/deployment.yaml"))
	g.Expect(objs[0].Generator).To(Equal(-1))
}

func TestGenerateRefusesTargetOutsideRoot(t *testing.T) {
	g := NewWithT(t)
	_, err := Generate(context.Background(), shell{}, t.TempDir(), "../x", ".flux.yaml", commandConfig("true"), Limits{})
	g.Expect(err).To(MatchError(ContainSubstring("outside the artifact root")))
}
