package builder

import (
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func TestBuildWithoutInputsRendersNothing(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(resourcesOf(t, `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: static
`), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n")
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := tmpl.Build(t.Context(), nil, &CommonMetadata{Labels: map[string]string{"a": "b"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).NotTo(BeNil())
	g.Expect(objects).To(BeEmpty())
}

// TestTypedAndMixedStrings pins down which templated strings keep their YAML
// type: only a string that is one action or block and nothing else.
func TestTypedAndMixedStrings(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(resourcesOf(t, `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
  values:
    number: << inputs.n >>
    intFromString: << inputs.s | int >>
    quoted: << inputs.n | quote >>
    float: << inputs.f >>
    padded: "  << inputs.n >>  "
    mixedNumber: << inputs.n >>0
    twoActions: << inputs.n >><< inputs.n >>
    injection: "owner: << inputs.owner >>"
    block: << if inputs.on >>42<< else >>0<< end >>
    empty: << if false >>x<< end >>
    list:
      - << inputs.n >>
      - static
    << inputs.key >>: templated key
`), "")
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := tmpl.Build(t.Context(), []Input{{
		"n": float64(7), "s": "12", "f": 1.5, "owner": "a: b # c", "on": true, "key": "dynamic",
	}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).To(HaveLen(1))
	g.Expect(objects[0].Object["values"]).To(Equal(map[string]any{
		"number":        int64(7),
		"intFromString": int64(12),
		"quoted":        "7",
		"float":         1.5,
		"padded":        int64(7),
		"mixedNumber":   "70",
		"twoActions":    "77",
		"injection":     "owner: a: b # c",
		"block":         int64(42),
		"empty":         nil,
		"list":          []any{int64(7), "static"},
		"dynamic":       "templated key",
	}))
	// Objects hold only JSON types, so the API machinery can copy them.
	g.Expect(func() { objects[0].DeepCopy() }).NotTo(Panic())
}

func TestResourcesTemplateSkipsEmptyDocuments(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(nil, `
---
# nothing here
---
<<- if inputs.create >>
apiVersion: v1
kind: Namespace
metadata:
  name: << inputs.name >>
<<- end >>
---

---
apiVersion: v1
kind: ConfigMap
metadata:
  name: << inputs.name >>
data:
  replicas: "3"
  count: 3
`)
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := tmpl.Build(t.Context(), inputsOf(t, `[{create: false, name: a}, {create: true, name: b}]`), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contents(objects)).To(Equal(objectsOf(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  replicas: "3"
  count: 3
---
apiVersion: v1
kind: Namespace
metadata:
  name: b
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
data:
  replicas: "3"
  count: 3
`)))
}

func TestDeduplication(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(resourcesOf(t, `
- apiVersion: source.toolkit.fluxcd.io/v1beta2
  kind: OCIRepository
  metadata:
    name: shared
    namespace: default
    labels:
      from: << inputs.tenant >>
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: OCIRepository
  metadata:
    name: shared
    namespace: default
    labels:
      from: same-group-other-version
- apiVersion: other.example.com/v1
  kind: OCIRepository
  metadata:
    name: shared
    namespace: default
    labels:
      from: other-group
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: OCIRepository
  metadata:
    name: shared
    namespace: other
    labels:
      from: other-namespace
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: shared
    labels:
      from: << inputs.tenant >>
    annotations:
      fluxcd.controlplane.io/reconcile: << if eq inputs.tenant "team1" >>disabled<< else >>enabled<< end >>
`), "")
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := tmpl.Build(t.Context(), inputsOf(t, `[{tenant: team1}, {tenant: team2}]`), nil)
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for _, o := range objects {
		got = append(got, o.GetAPIVersion()+" "+o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()+" from "+o.GetLabels()["from"])
	}
	g.Expect(got).To(Equal([]string{
		// The first rendering wins, across inputs and across versions of a group.
		"source.toolkit.fluxcd.io/v1beta2 OCIRepository default/shared from team1",
		"other.example.com/v1 OCIRepository default/shared from other-group",
		"source.toolkit.fluxcd.io/v1 OCIRepository other/shared from other-namespace",
		// Disabled for team1, so that copy claims nothing and team2's is kept.
		"v1 ConfigMap /shared from team2",
	}))
}

func TestBuildDoesNotModifyInputs(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(resourcesOf(t, `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: << $_ := set inputs.app "name" "changed" >><< inputs.app.name >>
`), "")
	g.Expect(err).NotTo(HaveOccurred())
	inputs := []Input{{"app": map[string]any{"name": "original"}}}
	objects, err := tmpl.Build(t.Context(), inputs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects[0].GetName()).To(Equal("changed"))
	g.Expect(inputs[0]["app"]).To(Equal(map[string]any{"name": "original"}))
}

// TestConcurrentBuilds shares one Templates between goroutines, as a
// controller with several workers would (run with -race).
func TestConcurrentBuilds(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(resourcesOf(t, `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
`), "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: << inputs.tenant >>\n")
	g.Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	errs := make([]error, 8)
	names := make([][]string, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inputs := []Input{{"tenant": "a"}, {"tenant": "b"}}
			objects, err := tmpl.Build(t.Context(), inputs, nil)
			errs[w] = err
			for _, o := range objects {
				names[w] = append(names[w], o.GetKind()+"/"+o.GetName())
			}
		}()
	}
	wg.Wait()
	for w := range 8 {
		g.Expect(errs[w]).NotTo(HaveOccurred())
		g.Expect(names[w]).To(Equal([]string{"Namespace/a", "Namespace/b", "ServiceAccount/a", "ServiceAccount/b"}))
	}
}
