package main

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/fluxapi"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// The flow is what the page draws of the whole system: sources with their artifacts, the objects
// that consume them, and the gates on each edge. It is built from the lists the page reads with
// the user's credentials, leniently: a field that is missing or of another type leaves its value
// empty rather than failing the page.

// flowNode is a source or a consumer (some kinds are both: a HelmChart, a ManifestGeneration),
// or the upstream a source fetches from (a Git server, a Helm repository).
type flowNode struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Upstream: the node is the URL of sources (Kind Upstream, Name the URL), so that the gates
	// of a source, which hold what it fetches, are drawn on an edge too.
	Upstream bool `json:"upstream,omitempty"`
	// Ready is the Ready condition's status ("" without one), with its reason and message.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Status is one word for colour and filters (ready, waiting, failing, suspended,
	// progressing, unknown), and Why says what waits or fails, in the words of the conditions.
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
	// Revision is a source's artifact revision, or the revision a consumer applied last.
	Revision string `json:"revision,omitempty"`
	// Digest, Size and UpdatedAt describe a source's artifact; URL is where it fetches from.
	Digest    string `json:"digest,omitempty"`
	Size      int64  `json:"size,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	URL       string `json:"url,omitempty"`
	// Author is who wrote the artifact's revision, where the source says (a commit's author, an
	// image's authors annotation).
	Author string `json:"author,omitempty"`
	// Waiting is what a consumer's gates hold (gatesapi.GatesStatus): its state and revision.
	GateState       string `json:"gateState,omitempty"`
	WaitingRevision string `json:"waitingRevision,omitempty"`
	HeldSince       string `json:"heldSince,omitempty"`
	Suspended       bool   `json:"suspended,omitempty"`
	// Gates are all the gates the object waits on, those of its edges and of an object that
	// has no input drawn.
	Gates []flowGate `json:"gates,omitempty"`
	// Inventory is what the consumer applied, at most maxInventoryShown entries of
	// InventoryCount.
	Inventory      []string `json:"inventory,omitempty"`
	InventoryCount int      `json:"inventoryCount,omitempty"`
	// Actions are the buttons the viewer's RBAC allows, set by the server per request.
	Actions *nodeActions `json:"actions,omitempty"`
}

// maxInventoryShown bounds the inventory each node carries: the page's data stays small with
// consumers of thousands of objects; the count says how many there are.
const maxInventoryShown = 50

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

// gateView is what the flow shows of a gate: its state and cause, and a pending approval.
type gateView struct {
	State string
	Cause string
	// Approval is "" or the Approved condition's message while a request waits for approvals.
	Approval string
}

type flowGraph struct {
	Nodes []flowNode `json:"nodes"`
	Edges []flowEdge `json:"edges"`
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
// selector: selectedProviders).
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

// selectedProviders are the ResourceSetInputProviders of the ResourceSet's namespace that its
// spec.inputsFrom selects by labels. A selector that does not parse selects none, as the
// resourceset-controller refuses it.
func selectedProviders(obj *unstructured.Unstructured, providers []unstructured.Unstructured) []flowRef {
	entries, _, _ := unstructured.NestedSlice(obj.Object, "spec", "inputsFrom")
	var refs []flowRef
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok || m["kind"] != "ResourceSetInputProvider" || m["name"] != nil && m["name"] != "" {
			continue
		}
		raw, ok := m["selector"].(map[string]any)
		if !ok {
			continue
		}
		var ls metav1.LabelSelector
		if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls) != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			continue
		}
		for i := range providers {
			p := &providers[i]
			if p.GetNamespace() == obj.GetNamespace() && sel.Matches(labels.Set(p.GetLabels())) {
				refs = append(refs, flowRef{kind: "ResourceSetInputProvider", key: types.NamespacedName{Namespace: p.GetNamespace(), Name: p.GetName()}})
			}
		}
	}
	return refs
}

// flowKinds are the kinds the flow shows: those that can wait behind gates, and Flux's
// ExternalArtifact, a source that other controllers (an ArtifactGenerator) produce.
var flowKinds = append(append([]gatedKind{}, gatedKinds...), gated(fluxapi.ExternalArtifact, false))

// flowInputs says where each kind that consumes others names them.
var flowInputs = map[string]func(*unstructured.Unstructured) []flowRef{
	"HelmChart":             sourceRefAt("spec", "sourceRef"),
	"ManifestGeneration":    sourceRefAt("spec", "sourceRef"),
	"ManifestUpdate":        generationRef,
	"ResourceSet":           inputProviders,
	"Kustomization":         sourceRefAt("spec", "sourceRef"),
	"HelmRelease":           firstOf(sourceRefAt("spec", "chartRef"), sourceRefAt("spec", "chart", "spec", "sourceRef")),
	"ImageUpdateAutomation": sourceRefAt("spec", "sourceRef"),
	"ExternalArtifact":      sourceRefAt("spec", "sourceRef"),
}

// buildFlow makes the flow of the objects listed by kind, with the gates the user can read (a gate
// missing from gates shows as unknown). Nodes and edges are sorted, so that the page does not
// move between two reads of the same objects.
func buildFlow(objects map[string][]unstructured.Unstructured, gates map[types.NamespacedName]gateView) flowGraph {
	g := flowGraph{Nodes: []flowNode{}, Edges: []flowEdge{}}
	upstreams := map[string]bool{}
	for _, k := range flowKinds {
		inputs := flowInputs[k.kind]
		for i := range objects[k.kind] {
			obj := &objects[k.kind][i]
			node := flowNodeOf(k, obj)
			node.Gates = gatesOfNode(k, obj, gates)
			node.Status, node.Why = statusOf(&node, gates)
			var refs []flowRef
			if inputs != nil {
				refs = inputs(obj)
			}
			if k.kind == "ResourceSet" {
				refs = append(refs, selectedProviders(obj, objects["ResourceSetInputProvider"])...)
			}
			if u := upstreamOf(k.kind, obj); u != "" {
				id := flowID("Upstream", types.NamespacedName{Name: u})
				if !upstreams[id] {
					upstreams[id] = true
					g.Nodes = append(g.Nodes, flowNode{ID: id, Kind: "Upstream", Name: u, Upstream: true, Status: "unknown"})
				}
				node.URL = u
				g.Edges = append(g.Edges, flowEdge{From: id, To: node.ID, Gates: node.Gates})
			}
			for _, in := range refs {
				g.Edges = append(g.Edges, flowEdge{From: flowID(in.kind, in.key), To: node.ID, Gates: node.Gates})
			}
			g.Nodes = append(g.Nodes, node)
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

// gatesOfNode are the gates obj waits on, each once, with their states.
func gatesOfNode(k gatedKind, obj *unstructured.Unstructured, gates map[types.NamespacedName]gateView) []flowGate {
	refs, _ := gatesOf(k, obj)
	out := make([]flowGate, 0, len(refs))
	seen := map[types.NamespacedName]bool{}
	for _, ref := range refs {
		key := gatesapi.ResolveRef(obj.GetNamespace(), ref)
		if seen[key] {
			continue
		}
		seen[key] = true
		state := gates[key].State
		if state == "" {
			state = "unknown"
		}
		out = append(out, flowGate{Namespace: key.Namespace, Name: key.Name, State: state})
	}
	return out
}

// statusOf sums the node up in one word, and says why it waits or fails: a suspension first
// (nothing moves), then the gates that hold a revision, then the Ready condition.
func statusOf(n *flowNode, gates map[types.NamespacedName]gateView) (string, string) {
	switch {
	case n.Suspended:
		return "suspended", "suspended: its controller does not reconcile it until it is resumed"
	case strings.HasPrefix(n.GateState, "closed") || n.GateState == "Held":
		return "waiting", waitingWhy(n, gates)
	case n.Ready == "False":
		return "failing", strings.TrimPrefix(n.Reason+": "+n.Message, ": ")
	case n.Ready == "Unknown":
		return "progressing", n.Message
	case n.Ready == "True":
		return "ready", ""
	}
	return "unknown", ""
}

// waitingWhy names the revision held and each gate that holds it, with its cause, and the
// approvals a gate waits for.
func waitingWhy(n *flowNode, gates map[types.NamespacedName]gateView) string {
	why := "waiting"
	if n.WaitingRevision != "" {
		why += " to apply " + n.WaitingRevision
	}
	var holders []string
	for _, fg := range n.Gates {
		if fg.State == "opened" {
			continue
		}
		v := gates[types.NamespacedName{Namespace: fg.Namespace, Name: fg.Name}]
		h := fmt.Sprintf("gate %s/%s is %s", fg.Namespace, fg.Name, fg.State)
		if v.Cause != "" {
			h += " (" + v.Cause + ")"
		}
		if v.Approval != "" {
			h += "; approval: " + v.Approval
		}
		holders = append(holders, h)
	}
	if len(holders) == 0 {
		return why + ": " + strings.TrimPrefix(n.GateState, "closed ")
	}
	return why + ": " + strings.Join(holders, "; ")
}

// upstreamOf is where a source fetches from, without a password: Git, Helm and OCI URLs, and a
// bucket's endpoint and name.
func upstreamOf(kind string, obj *unstructured.Unstructured) string {
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(obj.Object, path...)
		return v
	}
	var raw string
	switch kind {
	case "GitRepository", "HelmRepository", "OCIRepository":
		raw = str("spec", "url")
	case "Bucket":
		if e, b := str("spec", "endpoint"), str("spec", "bucketName"); e != "" && b != "" {
			raw = strings.TrimSuffix(e, "/") + "/" + b
		}
	}
	if raw == "" {
		return ""
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = url.User(u.User.Username())
		return u.String()
	}
	return raw
}

// flowNodeOf reads what the page shows of obj.
func flowNodeOf(k gatedKind, obj *unstructured.Unstructured) flowNode {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	n := flowNode{ID: flowID(k.kind, key), Kind: k.kind, Namespace: key.Namespace, Name: key.Name}
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(obj.Object, path...)
		return v
	}
	n.Suspended = suspended(k.kind, obj)
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
		for _, key := range []string{artifact.AuthorMetadataKey, artifact.OCIAuthorsAnnotation} {
			if a := str("status", "artifact", "metadata", key); a != "" && n.Author == "" {
				n.Author = a
			}
		}
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
		if w.HeldSince != "-" {
			n.HeldSince = w.HeldSince
		}
	}
	n.Inventory, n.InventoryCount = inventoryOf(obj)
	return n
}

// inventoryOf reads status.inventory.entries, whose IDs are `<namespace>_<name>_<group>_<kind>`
// (Flux's and Sluice's inventories), as "Kind namespace/name".
func inventoryOf(obj *unstructured.Unstructured) ([]string, int) {
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "inventory", "entries")
	var out []string
	for _, e := range entries {
		if len(out) == maxInventoryShown {
			break
		}
		m, _ := e.(map[string]any)
		id, _ := m["id"].(string)
		parts := strings.Split(id, "_")
		if len(parts) != 4 {
			out = append(out, id)
			continue
		}
		out = append(out, parts[3]+" "+parts[0]+"/"+parts[1])
	}
	return out, len(entries)
}
