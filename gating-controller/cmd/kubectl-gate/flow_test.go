package main

import (
	"encoding/json"
	"fmt"
	"strings"
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
spec: {url: "https://bot:s3cret@git.example.com/demo.git", gates: {refs: [bypass-signoff]}}
status:
  conditions: [{type: Ready, status: "True", reason: Succeeded, message: "stored artifact for revision 'main@sha1:2b1f'"}]
  artifact:
    revision: "main@sha1:2b1f"
    digest: "sha256:9c1e"
    size: 1832
    lastUpdateTime: "2026-12-01T10:00:00Z"
    metadata: {source.toolkit.fluxcd.io/author: "Ana <ana@example.com>"}
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
	states := map[types.NamespacedName]gateView{
		{Namespace: "sluice-demo", Name: "change-freeze"}:  {State: "closed", Cause: "Gate closed by the schedule of GateKeeper 'freeze'"},
		{Namespace: "sluice-demo", Name: "bypass-signoff"}: {State: "opened"},
	}
	flow := buildFlow(objects, states)

	// The Git server is a node too (without the password of the URL): the source's gates hold
	// what it fetches from there, and are drawn on that edge.
	g.Expect(flow.Nodes).To(HaveLen(6))
	upstream := "https://bot@git.example.com/demo.git"
	g.Expect(flow.Nodes[5]).To(Equal(flowNode{ID: "Upstream//" + upstream, Kind: "Upstream", Name: upstream, Upstream: true, Status: "unknown"}))
	g.Expect(flow.Nodes[0]).To(Equal(flowNode{ID: "GitRepository/sluice-demo/demo", Kind: "GitRepository",
		Namespace: "sluice-demo", Name: "demo", Ready: "True", Reason: "Succeeded", Message: "stored artifact for revision 'main@sha1:2b1f'",
		Status: "ready", Revision: "main@sha1:2b1f", Digest: "sha256:9c1e", Size: 1832, UpdatedAt: "2026-12-01T10:00:00Z", URL: upstream, Author: "Ana <ana@example.com>",
		Gates: []flowGate{{Namespace: "sluice-demo", Name: "bypass-signoff", State: "opened"}}}))
	byID := map[string]flowNode{}
	for _, n := range flow.Nodes {
		byID[n.ID] = n
	}
	production := byID["ManifestGeneration/sluice-demo/production"]
	g.Expect(production.Revision).To(Equal("main@sha1:0a0a"))
	g.Expect(production.GateState).To(Equal("Held"))
	g.Expect(production.WaitingRevision).To(Equal("main@sha1:2b1f"))
	// Why it waits names the revision and the closed gate with its cause; the open one is left out.
	g.Expect(production.Status).To(Equal("waiting"))
	g.Expect(production.Why).To(Equal("waiting to apply main@sha1:2b1f: gate sluice-demo/change-freeze is closed (Gate closed by the schedule of GateKeeper 'freeze')"))
	g.Expect(byID["ManifestGeneration/sluice-demo/staging"].Status).To(Equal("ready"))
	apps := byID["Kustomization/flux-system/apps"]
	g.Expect(apps.Suspended).To(BeTrue())
	g.Expect(apps.Status).To(Equal("suspended"))

	g.Expect(flow.Edges).To(Equal([]flowEdge{
		{From: "Upstream//" + upstream, To: "GitRepository/sluice-demo/demo",
			Gates: []flowGate{{Namespace: "sluice-demo", Name: "bypass-signoff", State: "opened"}}},
		{From: "GitRepository/sluice-demo/demo", To: "Kustomization/flux-system/apps",
			Gates: []flowGate{{Namespace: "ops", Name: "window", State: "unknown"}}},
		{From: "GitRepository/sluice-demo/demo", To: "ManifestGeneration/sluice-demo/production",
			Gates: []flowGate{{Namespace: "sluice-demo", Name: "change-freeze", State: "closed"}, {Namespace: "sluice-demo", Name: "bypass-signoff", State: "opened"}}},
		{From: "GitRepository/sluice-demo/demo", To: "ManifestGeneration/sluice-demo/staging", Gates: []flowGate{}},
		{From: "ManifestGeneration/sluice-demo/staging", To: "ManifestUpdate/sluice-demo/bump", Gates: []flowGate{}},
	}))
}

// A consumer failing says why in its Ready condition's words; a ResourceSet suspended by
// flux-operator's annotation is suspended; an inventory shows as kinds and names, bounded.
func TestFlowFailuresSuspensionsAndInventories(t *testing.T) {
	g := NewWithT(t)
	var entries strings.Builder
	for i := range 60 {
		fmt.Fprintf(&entries, "{id: team_cm-%d__ConfigMap, v: v1}, ", i)
	}
	objects := objectsOf(t, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: tenants, namespace: a, annotations: {fluxcd.controlplane.io/reconcile: disabled}}
status:
  inventory: {entries: [{id: _team1__Namespace, v: v1}, {id: team1_tenant__ConfigMap, v: v1}, {id: odd, v: v1}]}
`, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: broken, namespace: a}
status:
  conditions: [{type: Ready, status: "False", reason: GenerateFailed, message: "kustomize build: no such file"}]
  inventory: {entries: [`+entries.String()+`]}
`)
	flow := buildFlow(objects, nil)
	g.Expect(flow.Nodes).To(HaveLen(2))
	broken, tenants := flow.Nodes[0], flow.Nodes[1]
	g.Expect(flow.Edges).To(BeEmpty())
	g.Expect(broken.Status).To(Equal("failing"))
	g.Expect(broken.Why).To(Equal("GenerateFailed: kustomize build: no such file"))
	g.Expect(broken.InventoryCount).To(Equal(60))
	g.Expect(broken.Inventory).To(HaveLen(maxInventoryShown))
	g.Expect(broken.Inventory[0]).To(Equal("ConfigMap team/cm-0"))
	g.Expect(tenants.Status).To(Equal("suspended"))
	g.Expect(tenants.Inventory).To(Equal([]string{"Namespace /team1", "ConfigMap team1/tenant", "odd"}))
	g.Expect(tenants.InventoryCount).To(Equal(3))
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
		flowNode{ID: "Kustomization/a/odd", Kind: "Kustomization", Namespace: "a", Name: "odd", Status: "unknown", Gates: []flowGate{}},
		flowNode{ID: "ResourceSet/a/rs", Kind: "ResourceSet", Namespace: "a", Name: "rs", Status: "unknown", Gates: []flowGate{}},
	))
	g.Expect(flow.Edges).To(Equal([]flowEdge{
		{From: "ResourceSetInputProvider/a/tags", To: "ResourceSet/a/rs", Gates: []flowGate{}},
	}))
}

// A ResourceSet reads the input providers its spec.inputsFrom selects by labels, in its own
// namespace only, beside those it names.
func TestFlowOfProvidersSelectedByLabels(t *testing.T) {
	g := NewWithT(t)
	objects := objectsOf(t, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: apps, namespace: a}
spec:
  inputsFrom:
    - {kind: ResourceSetInputProvider, selector: {matchLabels: {team: one}}}
    - {kind: ResourceSetInputProvider, name: named}
    - {kind: ResourceSetInputProvider, selector: {matchExpressions: [{key: team, operator: Bogus}]}}
`, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata: {name: tags, namespace: a, labels: {team: one}}
`, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata: {name: branches, namespace: a, labels: {team: two}}
`, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata: {name: elsewhere, namespace: b, labels: {team: one}}
`)
	var edges []string
	for _, e := range buildFlow(objects, nil).Edges {
		edges = append(edges, e.From+" -> "+e.To)
	}
	g.Expect(edges).To(ConsistOf(
		"ResourceSetInputProvider/a/named -> ResourceSet/a/apps",
		"ResourceSetInputProvider/a/tags -> ResourceSet/a/apps",
	))
}

// Flux's ExternalArtifact is a source of the flow: its producer feeds it, a Kustomization reads it.
func TestFlowOfExternalArtifacts(t *testing.T) {
	g := NewWithT(t)
	objects := objectsOf(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: ExternalArtifact
metadata: {name: bundle, namespace: a}
spec: {sourceRef: {apiVersion: source.extensions.fluxcd.io/v1beta1, kind: ArtifactGenerator, name: gen}}
status:
  artifact: {revision: "latest@sha256:9c1e", digest: "sha256:9c1e", lastUpdateTime: "2026-12-01T10:00:00Z"}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: a}
spec: {sourceRef: {kind: ExternalArtifact, name: bundle}}
`)
	flow := buildFlow(objects, nil)
	g.Expect(flow.Nodes).To(HaveLen(2))
	g.Expect(flow.Nodes[0].ID).To(Equal("ExternalArtifact/a/bundle"))
	g.Expect(flow.Nodes[0].Revision).To(Equal("latest@sha256:9c1e"))
	var edges []string
	for _, e := range flow.Edges {
		edges = append(edges, e.From+" -> "+e.To)
	}
	g.Expect(edges).To(Equal([]string{"ArtifactGenerator/a/gen -> ExternalArtifact/a/bundle", "ExternalArtifact/a/bundle -> Kustomization/a/apps"}))
	data, ok := suspendPatch("ExternalArtifact", true)
	g.Expect(ok).To(BeFalse(), "an ExternalArtifact cannot be suspended: %s", data)
	g.Expect(reconciled("ExternalArtifact")).To(BeFalse())
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
	states := map[types.NamespacedName]gateView{}
	for i := range 50 {
		states[types.NamespacedName{Namespace: fmt.Sprintf("team-%d", i), Name: "freeze"}] = gateView{State: "closed", Cause: "Gate closed by default"}
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
