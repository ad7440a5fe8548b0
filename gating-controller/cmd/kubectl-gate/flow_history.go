package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

var metav1PatchOptions = metav1.PatchOptions{}

// flowHistory is the JSON of /api/flow/history: what an object went through, read when the
// viewer selects it.
type flowHistory struct {
	Revisions []historyRevision `json:"revisions"`
	Events    []historyEvent    `json:"events"`
	// Periods are a gate's open and closed periods, newest first; To is empty for the current one.
	Periods []historyPeriod `json:"periods"`
	// EventsNote says why events are missing (the viewer may not list them).
	EventsNote string `json:"eventsNote,omitempty"`
}

type historyRevision struct {
	Time     string `json:"time"`
	Revision string `json:"revision"`
	Note     string `json:"note"`
}

type historyEvent struct {
	Time    string `json:"time"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type historyPeriod struct {
	State string `json:"state"`
	From  string `json:"from"`
	To    string `json:"to"`
	Cause string `json:"cause"`
}

// maxHistoryEvents bounds the events shown: the newest.
const maxHistoryEvents = 50

func (d *dashboard) handleFlowHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, key := q.Get("kind"), types.NamespacedName{Namespace: q.Get("namespace"), Name: q.Get("name")}
	if err := d.flowCache.start(d.serveCtx); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	obj := d.flowCache.get(kind, key)
	if obj == nil {
		http.Error(w, kind+" "+key.String()+" is not in the flow", http.StatusNotFound)
		return
	}
	h := &flowHistory{Revisions: []historyRevision{}, Events: []historyEvent{}, Periods: []historyPeriod{}}
	if kind == gatingv1alpha1.GateKind {
		h.Periods = gatePeriods(obj)
	} else {
		h.Revisions = revisionsOf(obj)
	}
	h.Events, h.EventsNote = d.eventsOf(r.Context(), kind, key)
	for _, e := range h.Events {
		if e.Reason == gatesapi.HeldReason || e.Reason == gatesapi.ReleasedReason {
			h.Revisions = append(h.Revisions, historyRevision{Time: e.Time, Revision: e.Message, Note: e.Reason})
		}
	}
	sort.SliceStable(h.Revisions, func(i, j int) bool { return h.Revisions[i].Time > h.Revisions[j].Time })
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(h)
}

// revisionsOf reads the revisions an object reports: the artifact of a source, what a consumer
// applied last, and the snapshots of status.history (a ResourceSet's, newest first).
func revisionsOf(obj *unstructured.Unstructured) []historyRevision {
	str := func(m map[string]any, path ...string) string {
		v, _, _ := unstructured.NestedString(m, path...)
		return v
	}
	out := []historyRevision{}
	if rev := str(obj.Object, "status", "artifact", "revision"); rev != "" {
		out = append(out, historyRevision{Time: str(obj.Object, "status", "artifact", "lastUpdateTime"), Revision: rev, Note: "artifact"})
	}
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "history")
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		out = append(out, historyRevision{Time: str(m, "lastReconciled"), Revision: str(m, "digest"),
			Note: str(m, "lastReconciledStatus")})
	}
	if len(entries) == 0 {
		if rev := str(obj.Object, "status", "lastAppliedRevision"); rev != "" {
			out = append(out, historyRevision{Revision: rev, Note: "applied"})
		}
	}
	return out
}

// gatePeriods turns a gate's transitions (status.history, newest first) into periods.
func gatePeriods(obj *unstructured.Unstructured) []historyPeriod {
	gate := &gatingv1alpha1.Gate{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, gate); err != nil {
		return []historyPeriod{}
	}
	out := []historyPeriod{}
	to := ""
	for _, t := range gate.Status.History {
		state := "closed"
		if t.Opened {
			state = "opened"
		}
		cause := t.Cause
		if t.RequestedBy != "" {
			cause += " by " + t.RequestedBy
		}
		if reason := collapse(t.Reason); reason != "" {
			cause += ": " + reason
		}
		from := formatTime(t.Time.Time)
		out = append(out, historyPeriod{State: state, From: from, To: to, Cause: cause})
		to = from
	}
	return out
}

// eventsOf lists the events of the object, newest first, with the viewer's rights.
func (d *dashboard) eventsOf(ctx context.Context, kind string, key types.NamespacedName) ([]historyEvent, string) {
	out := []historyEvent{}
	cs, err := kubernetes.NewForConfig(d.config)
	if err != nil {
		return out, err.Error()
	}
	selector := fields.Set{"involvedObject.kind": kind, "involvedObject.name": key.Name}.AsSelector().String()
	list, err := cs.CoreV1().Events(key.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return out, "events not shown: " + skipReason(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return eventTime(&list.Items[i]).After(eventTime(&list.Items[j])) })
	for i := range list.Items {
		if i == maxHistoryEvents {
			break
		}
		e := &list.Items[i]
		out = append(out, historyEvent{Time: formatTime(eventTime(e)), Type: e.Type, Reason: e.Reason, Message: e.Message})
	}
	return out, ""
}

// eventTime is when the event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
