package patch

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

var app = workload.Ref{Namespace: "default", Kind: "deployment", Name: "app"}

func setImage(container, image string) func(*unstructured.Unstructured) (bool, error) {
	return func(u *unstructured.Unstructured) (bool, error) { return workload.SetImage(u, container, image) }
}

func setPolicy(policy string, value *string) func(*unstructured.Unstructured) (bool, error) {
	return func(u *unstructured.Unstructured) (bool, error) { return workload.SetPolicy(u, policy, value), nil }
}

func ptr(s string) *string { return &s }

// docs splits a patch file at its separators.
func docs(file []byte) []string {
	if len(file) == 0 {
		return nil
	}
	return strings.Split(string(file), "---\n")
}

const imageEntry = `apiVersion: apps/v1
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
`

func TestUpdateImage(t *testing.T) {
	g := NewWithT(t)
	gen := generated(t)

	file, changed, err := Update(gen, nil, app, setImage("app", "app:1.1"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(file)).To(Equal(imageEntry), "exactly one entry, naming one container")

	patched, dropped, err := Apply(gen, file, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dropped).To(BeEmpty())
	g.Expect(workload.Images(find(t, patched, "Deployment"))).To(Equal(map[string]string{"app": "app:1.1", "sidecar": "proxy:2.0"}))

	// The same release again changes nothing, byte for byte.
	again, changed, err := Update(gen, file, app, setImage("app", "app:1.1"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	g.Expect(again).To(Equal(file))

	// A later release replaces the entry; a second container joins it.
	file, changed, err = Update(gen, file, app, setImage("app", "app:1.2"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	file, _, err = Update(gen, file, app, setImage("sidecar", "proxy:2.1"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs(file)).To(HaveLen(1))
	patched, _, err = Apply(gen, file, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workload.Images(find(t, patched, "Deployment"))).To(Equal(map[string]string{"app": "app:1.2", "sidecar": "proxy:2.1"}))

	// Releasing the generated images again leaves no entry at all.
	file, _, err = Update(gen, file, app, setImage("app", "app:1.0"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	file, changed, err = Update(gen, file, app, setImage("sidecar", "proxy:2.0"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(file).To(BeEmpty())
}

func TestUpdatePolicy(t *testing.T) {
	g := NewWithT(t)
	gen := generated(t)

	file, changed, err := Update(gen, nil, app, setPolicy(workload.PolicyAutomated, ptr("true")), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(file)).To(Equal("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    fluxcd.io/automated: \"true\"\n  name: app\n  namespace: default\n"))

	// With an image change on top, still one entry.
	file, _, err = Update(gen, file, app, setImage("app", "app:1.1"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs(file)).To(HaveLen(1))
	patched, _, err := Apply(gen, file, nil)
	g.Expect(err).NotTo(HaveOccurred())
	d := find(t, patched, "Deployment")
	g.Expect(d.GetAnnotations()).To(Equal(map[string]string{"fluxcd.io/automated": "true"}))
	g.Expect(workload.Images(d)["app"]).To(Equal("app:1.1"))

	// Removing the policy takes the annotation out of the entry...
	file, changed, err = Update(gen, file, app, setPolicy(workload.PolicyAutomated, nil), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(file)).To(Equal(imageEntry))

	// ...and the entry goes when nothing is left in it.
	file, _, err = Update(gen, []byte(
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    fluxcd.io/automated: \"true\"\n  name: app\n  namespace: default\n"),
		app, setPolicy(workload.PolicyAutomated, nil), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(BeEmpty())
}

// A policy removed from a workload whose generated manifest carries it is
// recorded as a deletion, which applies.
func TestUpdateRemovesGeneratedAnnotation(t *testing.T) {
	g := NewWithT(t)
	gen := generated(t)
	find(t, gen, "Deployment").SetAnnotations(map[string]string{"fluxcd.io/locked": "true", "team": "a"})

	file, changed, err := Update(gen, nil, app, setPolicy(workload.PolicyLocked, nil), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(file)).To(ContainSubstring("fluxcd.io/locked: null"))
	patched, _, err := Apply(gen, file, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(find(t, patched, "Deployment").GetAnnotations()).To(Equal(map[string]string{"team": "a"}))

	// Locking it again needs no entry.
	file, _, err = Update(gen, file, app, setPolicy(workload.PolicyLocked, ptr("true")), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(BeEmpty())
}

// Other documents keep their bytes and their order.
func TestUpdateKeepsOtherEntries(t *testing.T) {
	g := NewWithT(t)
	header := "# Managed by sluice: image and policy changes of the generated workloads.\n"
	helmRelease := "# pinned by hand\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: apps}\nspec:\n  values:\n    image: {tag: 6.0.1}\n"
	stale := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: removed-from-the-chart\n  namespace: default\nspec:\n  replicas: 2\n"
	oldApp := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:1.0.1\n"
	in := header + "---\n" + helmRelease + "---\n" + oldApp + "---\n" + stale

	out, changed, err := Update(generated(t), []byte(in), app, setImage("app", "app:1.1"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(out)).To(Equal(header + "---\n" + helmRelease + "---\n" + imageEntry + "---\n" + stale))

	// A workload without an entry gets one at the end; the HelmRelease entry
	// can be changed too (JSON merge).
	hr := workload.Ref{Namespace: "apps", Kind: "HelmRelease", Name: "podinfo"}
	out, changed, err = Update(generated(t), []byte(in), hr, func(u *unstructured.Unstructured) (bool, error) {
		return unstructured.SetNestedField(u.Object, "6.1.0", "spec", "values", "image", "tag") == nil, nil
	}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(docs(out)).To(HaveLen(4))
	g.Expect(docs(out)[1]).To(Equal("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  values:\n    image:\n      tag: 6.1.0\n"))
	g.Expect(docs(out)[2]).To(Equal(oldApp))

	svc := workload.Ref{Namespace: "default", Kind: "Service", Name: "app"}
	out, _, err = Update(generated(t), []byte(in), svc, func(u *unstructured.Unstructured) (bool, error) {
		u.SetLabels(map[string]string{"exposed": "true"})
		return true, nil
	}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(HavePrefix(in + "---\n"))
	g.Expect(docs(out)).To(HaveLen(5))
}

func TestUpdateDefaultNamespace(t *testing.T) {
	g := NewWithT(t)
	gen := generated(t)
	d := find(t, gen, "Deployment")
	d.SetNamespace("")

	_, _, err := Update(gen, nil, app, setImage("app", "app:1.1"), nil)
	g.Expect(err).To(MatchError("workload default:deployment/app is not among the generated resources"))

	file, changed, err := Update(gen, nil, app, setImage("app", "app:1.1"), nil, WithDefaultNamespace("default"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(file)).To(Equal(strings.Replace(imageEntry, "  namespace: default\n", "", 1)))
}

func TestUpdateErrors(t *testing.T) {
	twice := objects(t, generatedYAML+"---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\n")
	tests := []struct {
		name      string
		generated []*unstructured.Unstructured
		patchFile string
		ref       workload.Ref
		change    func(*unstructured.Unstructured) (bool, error)
		wantErr   string
	}{
		{"workload not generated", generated(t), "", workload.Ref{Namespace: "default", Kind: "Deployment", Name: "web"}, setImage("app", "x"), "workload default:deployment/web is not among the generated resources"},
		{"workload generated twice", twice, "", app, setImage("app", "x"), "workload default:deployment/app is generated more than once"},
		{"missing container", generated(t), "", app, setImage("web", "x"), `changing default:deployment/app: kind Deployment has no container "web" (default:deployment/app)`},
		{"malformed patch file", generated(t), "kind: [\n", app, setImage("app", "x"), "patch file document 1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, changed, err := Update(tt.generated, []byte(tt.patchFile), tt.ref, tt.change, nil)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix(tt.wantErr))
			g.Expect(out).To(BeNil())
			g.Expect(changed).To(BeFalse())
		})
	}
}

func TestUpdateNoChange(t *testing.T) {
	g := NewWithT(t)
	in := []byte("# nothing yet\n")
	out, changed, err := Update(generated(t), in, app, setImage("sidecar", "proxy:2.0"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	g.Expect(out).To(Equal(in))
}
