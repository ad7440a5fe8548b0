package main

import (
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// objectsOf parses YAML documents into the lists buildFlow takes, by kind.
func objectsOf(t testing.TB, docs ...string) map[string][]unstructured.Unstructured {
	t.Helper()
	out := map[string][]unstructured.Unstructured{}
	for _, d := range docs {
		// As the API server's lists decode: integers are int64.
		data, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		obj := unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		out[obj.GetKind()] = append(out[obj.GetKind()], obj)
	}
	return out
}

// The flow of the demo: one GitRepository read by two ManifestGenerations, the production one
// behind the change freeze (closed, holding a newer revision), a ManifestUpdate of staging, and a
// Flux Kustomization of another namespace bound by the gates annotation to a gate the user cannot
// see. Each consumer's edge carries its gates with their states, a source shows its artifact and
// a consumer what it applied and what waits.
func TestFlowOfTheDemo(t *testing.T) {
	g := NewWithT(t)
	objects := objectsOf(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: demo, namespace: sluice-demo}
status:
  conditions: [{type: Ready, status: "True", reason: Succeeded, message: "stored artifact for revision 'main@sha1:2b1f'"}]
  artifact: {revision: "main@sha1:2b1f", digest: "sha256:9c1e", size: 1832, lastUpdateTime: "2026-12-01T10:00:00Z"}
`, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: staging, namespace: sluice-demo}
spec: {sourceRef: {kind: GitRepository, name: demo}}
status:
  lastAppliedRevision: "main@sha1:2b1f"
  conditions: [{type: Ready, status: "True", reason: Succeeded, message: applied}]
`, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: production, namespace: sluice-demo}
spec:
  sourceRef: {kind: GitRepository, name: demo}
  gates: {refs: [change-freeze, sluice-demo/change-freeze, bypass-signoff]}
status:
  lastAppliedRevision: "main@sha1:0a0a"
  gates: {state: Held, waitingRevision: "main@sha1:2b1f"}
  conditions: [{type: Ready, status: "True", reason: Held, message: "held by gate 'change-freeze'"}]
`, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata: {name: bump, namespace: sluice-demo}
spec: {generationRef: {name: staging}}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
  annotations: {gating.toolkit.fluxcd.io/gates: "ops/window"}
spec:
  suspend: true
  sourceRef: {kind: GitRepository, name: demo, namespace: sluice-demo}
`)
	states := map[types.NamespacedName]string{
		{Namespace: "sluice-demo", Name: "change-freeze"}:  "closed",
		{Namespace: "sluice-demo", Name: "bypass-signoff"}: "opened",
	}
	flow := buildFlow(objects, states)

	g.Expect(flow.Nodes).To(HaveLen(5))
	g.Expect(flow.Nodes[0]).To(Equal(flowNode{ID: "GitRepository/sluice-demo/demo", Kind: "GitRepository",
		Namespace: "sluice-demo", Name: "demo", Ready: "True", Reason: "Succeeded", Message: "stored artifact for revision 'main@sha1:2b1f'",
		Revision: "main@sha1:2b1f", Digest: "sha256:9c1e", Size: 1832, UpdatedAt: "2026-12-01T10:00:00Z"}))
	byID := map[string]flowNode{}
	for _, n := range flow.Nodes {
		byID[n.ID] = n
	}
	production := byID["ManifestGeneration/sluice-demo/production"]
	g.Expect(production.Revision).To(Equal("main@sha1:0a0a"))
	g.Expect(production.GateState).To(Equal("Held"))
	g.Expect(production.WaitingRevision).To(Equal("main@sha1:2b1f"))
	g.Expect(byID["Kustomization/flux-system/apps"].Suspended).To(BeTrue())

	g.Expect(flow.Edges).To(Equal([]flowEdge{
		{From: "GitRepository/sluice-demo/demo", To: "Kustomization/flux-system/apps",
			Gates: []flowGate{{Namespace: "ops", Name: "window", State: "unknown"}}},
		{From: "GitRepository/sluice-demo/demo", To: "ManifestGeneration/sluice-demo/production",
			Gates: []flowGate{{Namespace: "sluice-demo", Name: "change-freeze", State: "closed"}, {Namespace: "sluice-demo", Name: "bypass-signoff", State: "opened"}}},
		{From: "GitRepository/sluice-demo/demo", To: "ManifestGeneration/sluice-demo/staging", Gates: []flowGate{}},
		{From: "ManifestGeneration/sluice-demo/staging", To: "ManifestUpdate/sluice-demo/bump", Gates: []flowGate{}},
	}))
}

// Objects whose fields are missing or of other types still show, with what could be read.
func TestFlowOfMalformedObjects(t *testing.T) {
	g := NewWithT(t)
	objects := objectsOf(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: odd, namespace: a, annotations: {gating.toolkit.fluxcd.io/gates: "not//a/ref"}}
spec: {sourceRef: "GitRepository/x", suspend: "yes"}
status: {conditions: [1, {type: Ready, status: 5}], lastAppliedRevision: 3}
`, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: rs, namespace: a}
spec: {inputsFrom: [1, {kind: ResourceSetInputProvider}, {kind: ResourceSetInputProvider, name: tags}], gates: {refs: 7}}
`)
	flow := buildFlow(objects, nil)
	g.Expect(flow.Nodes).To(ConsistOf(
		flowNode{ID: "Kustomization/a/odd", Kind: "Kustomization", Namespace: "a", Name: "odd"},
		flowNode{ID: "ResourceSet/a/rs", Kind: "ResourceSet", Namespace: "a", Name: "rs"},
	))
	g.Expect(flow.Edges).To(Equal([]flowEdge{
		{From: "ResourceSetInputProvider/a/tags", To: "ResourceSet/a/rs", Gates: []flowGate{}},
	}))
}

// BenchmarkFlow1000Sources1000Consumers builds and encodes the flow of 1,000 GitRepositories,
// each read by a ManifestGeneration behind a gate: the page's data at the size the page must
// stay fast at.
func BenchmarkFlow1000Sources1000Consumers(b *testing.B) {
	var docs []string
	for i := range 1000 {
		docs = append(docs, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo-%d, namespace: team-%d}
status:
  conditions: [{type: Ready, status: "True", reason: Succeeded, message: "stored artifact for revision 'main@sha1:%040x'"}]
  artifact: {revision: "main@sha1:%040x", digest: "sha256:%064x", size: 1832, lastUpdateTime: "2026-12-01T10:00:00Z"}
`, i, i%50, i, i, i), fmt.Sprintf(`
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: app-%d, namespace: team-%d}
spec:
  sourceRef: {kind: GitRepository, name: repo-%d}
  gates: {refs: [freeze]}
status:
  lastAppliedRevision: "main@sha1:%040x"
  gates: {state: Held, waitingRevision: "main@sha1:%040x"}
  conditions: [{type: Ready, status: "True", reason: Held, message: "held by gate 'freeze'"}]
`, i, i%50, i, i, i+1))
	}
	objects := objectsOf(b, docs...)
	states := map[types.NamespacedName]string{}
	for i := range 50 {
		states[types.NamespacedName{Namespace: fmt.Sprintf("team-%d", i), Name: "freeze"}] = "closed"
	}
	b.ReportAllocs()
	for b.Loop() {
		flow := buildFlow(objects, states)
		if len(flow.Edges) != 1000 {
			b.Fatalf("%d edges", len(flow.Edges))
		}
		if _, err := json.Marshal(flow); err != nil {
			b.Fatal(err)
		}
	}
}
