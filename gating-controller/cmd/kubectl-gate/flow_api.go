package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// flowData is the JSON of /api/flow: the flow, the gates with their buttons, and the kinds the
// viewer cannot read.
type flowData struct {
	Now       string        `json:"now"`
	Namespace string        `json:"namespace"`
	Version   uint64        `json:"version"`
	Nodes     []flowNode    `json:"nodes"`
	Edges     []flowEdge    `json:"edges"`
	Gates     []flowGateUI  `json:"gates"`
	Skipped   []skippedKind `json:"skipped"`
}

// flowGateUI is a gate as the flow page lists it.
type flowGateUI struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	State     string `json:"state"`
	Cause     string `json:"cause"`
	Approval  string `json:"approval,omitempty"`
	// ApprovalRevision is the revision of the pending request, which a response is for.
	ApprovalRevision string       `json:"approvalRevision,omitempty"`
	Actions          *gateActions `json:"actions,omitempty"`
}

// flow reads the flow from the watches' caches and asks which buttons the viewer may use.
func (d *dashboard) flow(ctx context.Context) (*flowData, error) {
	if err := d.flowCache.start(d.serveCtx); err != nil {
		return nil, err
	}
	version := d.flowCache.currentVersion()
	views := map[types.NamespacedName]gateView{}
	data := &flowData{Now: formatTime(d.now()), Namespace: d.namespace, Version: version,
		Gates: []flowGateUI{}, Skipped: append([]skippedKind{}, d.flowCache.skipped...)}
	for _, u := range d.flowCache.list(gatingv1alpha1.GateKind) {
		gate := &gatingv1alpha1.Gate{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gate); err != nil {
			continue // not a Gate this plugin can read; the gate page says the same by leaving it out
		}
		v := gateView{State: stateWord(gate), Cause: stateCause(gate), Approval: approvalWaiting(gate)}
		views[types.NamespacedName{Namespace: gate.Namespace, Name: gate.Name}] = v
		ui := flowGateUI{ID: gate.Namespace + "/" + gate.Name, Namespace: gate.Namespace,
			Name: gate.Name, State: v.State, Cause: v.Cause, Approval: v.Approval}
		if v.Approval != "" {
			ui.ApprovalRevision = gate.Status.Approval.Pending.Revision
		}
		data.Gates = append(data.Gates, ui)
	}
	sort.Slice(data.Gates, func(i, j int) bool { return data.Gates[i].ID < data.Gates[j].ID })
	objects := map[string][]unstructured.Unstructured{}
	for _, k := range flowKinds {
		objects[k.kind] = d.flowCache.list(k.kind)
	}
	g := buildFlow(objects, views)
	data.Nodes, data.Edges = g.Nodes, g.Edges
	d.offerActions(ctx, data)
	return data, nil
}

// approvalWaiting is the Approved condition's message while a request waits for approvals.
func approvalWaiting(gate *gatingv1alpha1.Gate) string {
	a := gate.Status.Approval
	if gate.Spec.Approval == nil || a == nil || a.Pending == nil || a.State != gatingv1alpha1.ApprovalPending {
		return ""
	}
	for _, c := range gate.Status.Conditions {
		if c.Type == "Approved" && c.Message != "" {
			return "Pending: " + oneLine(c.Message)
		}
	}
	return "Pending"
}

// offerActions sets the buttons of every node and gate from the viewer's rights: patch on the
// object's resource for reconcile and suspend, patch on gates for open and close, create on
// gateapprovals to respond.
func (d *dashboard) offerActions(ctx context.Context, data *flowData) {
	keys := map[accessKey]bool{}
	resources := map[string]accessKey{}
	for _, k := range flowKinds {
		resources[k.kind] = accessKey{group: k.gvr.Group, resource: k.gvr.Resource, verb: "patch"}
	}
	inNamespace := func(k accessKey, ns string) accessKey { k.namespace = ns; return k }
	gatePatch := accessKey{group: gateResource.Group, resource: gateResource.Resource, verb: "patch"}
	respond := accessKey{group: gatingv1alpha1.GroupVersion.Group, resource: "gateapprovals", verb: "create"}
	for _, n := range data.Nodes {
		if r, ok := resources[n.Kind]; ok {
			keys[inNamespace(r, n.Namespace)] = false
		}
	}
	for _, g := range data.Gates {
		keys[inNamespace(gatePatch, g.Namespace)] = false
		keys[inNamespace(respond, g.Namespace)] = false
	}
	d.access.resolve(ctx, keys)
	for i := range data.Nodes {
		n := &data.Nodes[i]
		if r, ok := resources[n.Kind]; ok && reconciled(n.Kind) && keys[inNamespace(r, n.Namespace)] {
			n.Actions = &nodeActions{Reconcile: true, Suspend: suspendStyleOf(n.Kind) != noSuspend}
		}
	}
	for i := range data.Gates {
		g := &data.Gates[i]
		mayPatch := keys[inNamespace(gatePatch, g.Namespace)]
		g.Actions = &gateActions{Open: mayPatch, Close: mayPatch, Respond: keys[inNamespace(respond, g.Namespace)]}
	}
}

func (d *dashboard) handleFlow(w http.ResponseWriter, r *http.Request) {
	data, err := d.flow(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(data)
}

// flowHeartbeat keeps the event stream's connection from being closed as idle by a proxy.
const flowHeartbeat = 30 * time.Second

// handleFlowEvents streams a `change` event (Server-Sent Events) with the cache's version once
// at the start and after changes, at most one per flowCoalesce: a burst of changes (a
// reconcile writes status several times) makes one read of the flow.
func (d *dashboard) handleFlowEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	if err := d.flowCache.start(d.serveCtx); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	changes, cancel := d.flowCache.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	send := func() bool {
		_, err := fmt.Fprintf(w, "event: change\ndata: %d\n\n", d.flowCache.currentVersion())
		flusher.Flush()
		return err == nil
	}
	if !send() {
		return
	}
	heartbeat := time.NewTicker(flowHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-d.serveCtx.Done():
			// The caller's session ended (idle, or its token revoked): the page reconnects,
			// and its next request starts a session, or is refused.
			return
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-changes:
			select {
			case <-r.Context().Done():
				return
			case <-time.After(flowCoalesce):
			}
			if !send() {
				return
			}
		}
	}
}

// flowCoalesce is how long a change waits for the changes that follow it before the page is told.
const flowCoalesce = 100 * time.Millisecond

// handleObjectAction reconciles, suspends or resumes an object of the flow, as the viewer.
func (d *dashboard) handleObjectAction(w http.ResponseWriter, r *http.Request) {
	if !fromThePage(w, r) {
		return
	}
	kind, ns, name, action := r.PathValue("kind"), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action")
	if d.namespace != "" && ns != d.namespace {
		http.Error(w, "the page shows namespace "+d.namespace+" only", http.StatusForbidden)
		return
	}
	var k *gatedKind
	for i := range flowKinds {
		if flowKinds[i].kind == kind {
			k = &flowKinds[i]
		}
	}
	if k == nil {
		http.Error(w, fmt.Sprintf("%q is not a kind of the flow", kind), http.StatusNotFound)
		return
	}
	if !reconciled(kind) {
		http.Error(w, kind+" is written by its producer: act on the producer", http.StatusConflict)
		return
	}
	var patch []byte
	var done string
	switch action {
	case "reconcile":
		patch, done = reconcilePatch(time.Now()), "reconcile requested"
	case "suspend", "resume":
		var ok bool
		if patch, ok = suspendPatch(kind, action == "suspend"); !ok {
			http.Error(w, kind+" cannot be suspended: it follows the object it belongs to", http.StatusConflict)
			return
		}
		done = map[string]string{"suspend": "suspended", "resume": "resumed"}[action]
	default:
		http.NotFound(w, r)
		return
	}
	if _, err := d.dynamic.Resource(k.gvr).Namespace(ns).Patch(r.Context(), name, types.MergePatchType, patch, metav1PatchOptions); err != nil {
		writeAPIError(w, err)
		return
	}
	writeMessage(w, fmt.Sprintf("%s %s/%s: %s", kind, ns, name, done))
}

// handleGateRequest opens or closes a gate as the viewer, as `kubectl gate open|close` does.
func (d *dashboard) handleGateRequest(kind requestKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !fromThePage(w, r) {
			return
		}
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		if d.namespace != "" && ns != d.namespace {
			http.Error(w, "the page shows namespace "+d.namespace+" only", http.StatusForbidden)
			return
		}
		var body struct {
			Reason   string `json:"reason"`
			Duration string `json:"duration"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8192)).Decode(&body); err != nil {
			http.Error(w, "invalid request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		body.Reason = strings.TrimSpace(body.Reason)
		if err := validateRequestDuration(body.Duration); err != nil {
			http.Error(w, strings.Replace(err.Error(), "--for", "duration", 1), http.StatusBadRequest)
			return
		}
		by, err := selfSubjectReview(r.Context(), d.config)
		if err != nil || by == "" {
			http.Error(w, fmt.Sprintf("cannot ask the API server who you are, to record it on the request: %v", err), http.StatusBadGateway)
			return
		}
		patch, err := requestPatch(kind, time.Now(), body.Reason, by, body.Duration)
		if err == nil && kind.revision != "" {
			patch, err = withRevision(patch, kind.revision, "")
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if _, err := d.dynamic.Resource(gateResource).Namespace(ns).Patch(r.Context(), name, types.MergePatchType, patch, metav1PatchOptions); err != nil {
			writeAPIError(w, err)
			return
		}
		writeMessage(w, requestSummary(kind, ns, name, by, body.Reason, body.Duration))
	}
}

func writeMessage(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// fromThePage refuses a write that does not come from the page itself: it must carry a JSON
// body and the X-Sluice-Dashboard header, which another site's page cannot send without a CORS
// preflight that this server never grants, and no Origin but the page's own.
func fromThePage(w http.ResponseWriter, r *http.Request) bool {
	ok := r.Header.Get("X-Sluice-Dashboard") == "1" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	if origin := r.Header.Get("Origin"); origin != "" {
		// The page's own origin, served over HTTP by the plugin or HTTPS behind a cluster's proxy.
		u, err := url.Parse(origin)
		ok = ok && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host
	}
	if !ok {
		http.Error(w, "actions come from the dashboard page only", http.StatusForbidden)
	}
	return ok
}
