package main

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// The flow is what the page draws of the whole system: sources with their artifacts, the objects
// that consume them, and the gates on each edge. It is built from the lists the page reads with
// the user's credentials, leniently: a field that is missing or of another type leaves its value
// empty rather than failing the page.

// flowNode is a source or a consumer (some kinds are both: a HelmChart, a ManifestGeneration).
type flowNode struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is the Ready condition's status ("" without one), with its reason and message.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Revision is a source's artifact revision, or the revision a consumer applied last.
	Revision string `json:"revision,omitempty"`
	// Digest, Size and UpdatedAt describe a source's artifact.
	Digest    string `json:"digest,omitempty"`
	Size      int64  `json:"size,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	// Waiting is what a consumer's gates hold (gatesapi.GatesStatus): its state and revision.
	GateState       string `json:"gateState,omitempty"`
	WaitingRevision string `json:"waitingRevision,omitempty"`
	Suspended       bool   `json:"suspended,omitempty"`
}

// flowEdge is a consumer's input: the source it reads, with the gates the consumer waits on.
type flowEdge struct {
	From  string     `json:"from"`
	To    string     `json:"to"`
	Gates []flowGate `json:"gates,omitempty"`
}

type flowGate struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is opened, closed, or unknown (not evaluated, or not visible to the user).
	State string `json:"state"`
}

type flowGraph struct {
	Nodes []flowNode `json:"nodes"`
	Edges []flowEdge `json:"edges"`
}

// flowKind is a kind of the flow, with where its objects name their inputs.
type flowKind struct {
	gated gatedKind
	// inputs are the objects obj reads, as kind and key.
	inputs func(obj *unstructured.Unstructured) []flowRef
}

type flowRef struct {
	kind string
	key  types.NamespacedName
}

func flowID(kind string, key types.NamespacedName) string {
	return kind + "/" + key.Namespace + "/" + key.Name
}

// sourceRefAt reads a {kind, name, namespace} reference at path; the namespace defaults to the
// object's, as Flux's cross-namespace references do.
func sourceRefAt(path ...string) func(obj *unstructured.Unstructured) []flowRef {
	return func(obj *unstructured.Unstructured) []flowRef {
		ref, ok, _ := unstructured.NestedStringMap(obj.Object, path...)
		if !ok || ref["kind"] == "" || ref["name"] == "" {
			return nil
		}
		ns := ref["namespace"]
		if ns == "" {
			ns = obj.GetNamespace()
		}
		return []flowRef{{kind: ref["kind"], key: types.NamespacedName{Namespace: ns, Name: ref["name"]}}}
	}
}

// firstOf returns the references of the first reader that finds any.
func firstOf(readers ...func(*unstructured.Unstructured) []flowRef) func(*unstructured.Unstructured) []flowRef {
	return func(obj *unstructured.Unstructured) []flowRef {
		for _, r := range readers {
			if refs := r(obj); len(refs) > 0 {
				return refs
			}
		}
		return nil
	}
}

// generationRef is a ManifestUpdate's ManifestGeneration.
func generationRef(obj *unstructured.Unstructured) []flowRef {
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "generationRef", "name")
	if name == "" {
		return nil
	}
	return []flowRef{{kind: "ManifestGeneration", key: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// inputProviders are the providers a ResourceSet names in spec.inputsFrom (those chosen by a
// selector are matched in buildFlow, which knows the providers).
func inputProviders(obj *unstructured.Unstructured) []flowRef {
	entries, _, _ := unstructured.NestedSlice(obj.Object, "spec", "inputsFrom")
	var refs []flowRef
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		if kind == "" || name == "" {
			continue
		}
		refs = append(refs, flowRef{kind: kind, key: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}})
	}
	return refs
}

// flowInputs says where each kind that consumes others names them.
var flowInputs = map[string]func(*unstructured.Unstructured) []flowRef{
	"HelmChart":             sourceRefAt("spec", "sourceRef"),
	"ManifestGeneration":    sourceRefAt("spec", "sourceRef"),
	"ManifestUpdate":        generationRef,
	"ResourceSet":           inputProviders,
	"Kustomization":         sourceRefAt("spec", "sourceRef"),
	"HelmRelease":           firstOf(sourceRefAt("spec", "chartRef"), sourceRefAt("spec", "chart", "spec", "sourceRef")),
	"ImageUpdateAutomation": sourceRefAt("spec", "sourceRef"),
}

// buildFlow makes the flow of the objects listed by kind, with the gates' states (a gate
// missing from states shows as unknown). Nodes and edges are sorted, so that the page does not
// move between two reads of the same objects.
func buildFlow(objects map[string][]unstructured.Unstructured, states map[types.NamespacedName]string) flowGraph {
	g := flowGraph{Nodes: []flowNode{}, Edges: []flowEdge{}}
	for _, k := range gatedKinds {
		inputs := flowInputs[k.kind]
		for i := range objects[k.kind] {
			obj := &objects[k.kind][i]
			node := flowNodeOf(k, obj)
			g.Nodes = append(g.Nodes, node)
			if inputs == nil {
				continue
			}
			refs, _ := gatesOf(k, obj)
			gates := make([]flowGate, 0, len(refs))
			seen := map[types.NamespacedName]bool{}
			for _, ref := range refs {
				key := gatesapi.ResolveRef(obj.GetNamespace(), ref)
				if seen[key] {
					continue
				}
				seen[key] = true
				state := states[key]
				if state == "" {
					state = "unknown"
				}
				gates = append(gates, flowGate{Namespace: key.Namespace, Name: key.Name, State: state})
			}
			for _, in := range inputs(obj) {
				g.Edges = append(g.Edges, flowEdge{From: flowID(in.kind, in.key), To: node.ID, Gates: gates})
			}
		}
	}
	sort.Slice(g.Nodes, func(i, j int) bool { return g.Nodes[i].ID < g.Nodes[j].ID })
	sort.SliceStable(g.Edges, func(i, j int) bool {
		if g.Edges[i].To != g.Edges[j].To {
			return g.Edges[i].To < g.Edges[j].To
		}
		return g.Edges[i].From < g.Edges[j].From
	})
	return g
}

// flowNodeOf reads what the page shows of obj.
func flowNodeOf(k gatedKind, obj *unstructured.Unstructured) flowNode {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	n := flowNode{ID: flowID(k.kind, key), Kind: k.kind, Namespace: key.Namespace, Name: key.Name}
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(obj.Object, path...)
		return v
	}
	n.Suspended, _, _ = unstructured.NestedBool(obj.Object, "spec", "suspend")
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		n.Ready, _ = m["status"].(string)
		n.Reason, _ = m["reason"].(string)
		n.Message, _ = m["message"].(string)
	}
	if rev := str("status", "artifact", "revision"); rev != "" {
		n.Revision = rev
		n.Digest = str("status", "artifact", "digest")
		n.UpdatedAt = str("status", "artifact", "lastUpdateTime")
		switch size, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "artifact", "size"); v := size.(type) {
		case int64:
			n.Size = v
		case float64:
			n.Size = int64(v)
		}
	} else {
		n.Revision = str("status", "lastAppliedRevision")
	}
	if _, w := gatesOf(k, obj); w.State != "-" && w.State != "" {
		n.GateState = w.State
		if w.WaitingRevision != "-" {
			n.WaitingRevision = w.WaitingRevision
		}
	}
	return n
}
