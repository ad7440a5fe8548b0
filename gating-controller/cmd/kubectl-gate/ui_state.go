package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// dashboard assembles what the page shows, with the user's own credentials, on each poll.
type dashboard struct {
	client client.Client
	// config is the user's REST config, for the identity of the GateApprovals the page creates.
	config  *rest.Config
	dynamic dynamic.Interface
	// namespace is the namespace shown; empty for all namespaces.
	namespace string
	now       func() time.Time
	// serveCtx ends when the page stops being served: the flow's watches and event streams end
	// with it.
	serveCtx  context.Context
	flowCache *flowCache
	access    *accessCache
}

// uiState is the JSON of /api/state.
type uiState struct {
	Now          string   `json:"now"`
	Namespace    string   `json:"namespace"` // empty for all namespaces
	TimelineDays int      `json:"timelineDays"`
	Gates        []uiGate `json:"gates"`
	// Skipped are the kinds the page could not list (not installed, or forbidden to the user).
	Skipped []skippedKind `json:"skipped"`
}

type uiGate struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is opened, closed, or unknown until the gating-controller has evaluated the gate.
	State            string `json:"state"`
	Cause            string `json:"cause"`             // the Cause line of `kubectl gate status NAME`
	Warning          string `json:"warning,omitempty"` // a GateKeeper that cannot be evaluated
	Default          string `json:"default"`
	Request          string `json:"request"`
	RequestEnd       string `json:"requestEnd"`
	NextTransitionAt string `json:"nextTransitionAt"`
	// Pending are requests written to the gate's annotations that the controller has not handled.
	Pending      []string        `json:"pending"`
	Keepers      []uiKeeper      `json:"keepers"`
	Timeline     []uiTransition  `json:"timeline"`
	TimelineNote string          `json:"timelineNote,omitempty"`
	History      []uiHistory     `json:"history"`
	Waiting      []waitingObject `json:"waiting"`
	// Approval is set on gates with spec.approval.
	Approval *uiApproval `json:"approval,omitempty"`
	// Promotion is the gate's promotion chain and checks; nil when it has none.
	Promotion *uiPromotion `json:"promotion,omitempty"`
	// Deletions are the deletion sets that wait on the gate's approvers.
	Deletions []uiDeletion `json:"deletions"`
}

type uiKeeper struct {
	Name     string `json:"name"`
	TimeZone string `json:"timeZone"`
	Error    string `json:"error,omitempty"`
}

type uiHistory struct {
	Time        string `json:"time"`
	State       string `json:"state"`
	Cause       string `json:"cause"`
	RequestedBy string `json:"requestedBy"`
	Reason      string `json:"reason"`
}

// state reads the gates, their keepers and the gated objects, and puts them together.
func (d *dashboard) state(ctx context.Context) (*uiState, error) {
	now := d.now()
	st := &uiState{Now: formatTime(now), Namespace: d.namespace, TimelineDays: timelineDays,
		Gates: []uiGate{}, Skipped: []skippedKind{}}

	gates := &gatingv1alpha1.GateList{}
	if err := d.client.List(ctx, gates, d.inNamespace()...); err != nil {
		return nil, fmt.Errorf("listing gates: %w", err)
	}
	keepers, skipped := d.keepers(ctx)
	st.Skipped = append(st.Skipped, skipped...)
	// With -n, an object of another namespace that names a gate of this one is not listed: the
	// page shows one namespace, as kubectl does; -A shows them all.
	waiting := listWaiting(ctx, d.dynamic, d.namespace, "")
	st.Skipped = append(st.Skipped, waiting.skipped...)

	sort.Slice(gates.Items, func(i, j int) bool {
		a, b := gates.Items[i], gates.Items[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	canRespond := d.mayRespond(ctx)
	for i := range gates.Items {
		gate := &gates.Items[i]
		key := types.NamespacedName{Namespace: gate.Namespace, Name: gate.Name}
		ui := newUIGate(gate, keepers[key], waiting.byGate[key], now, readCalendar(ctx, d.client))
		ui.Approval = approvalOf(gate, canRespond)
		ui.Promotion = promotionOf(gate)
		if ui.Deletions = waiting.deletions[key]; ui.Deletions == nil {
			ui.Deletions = []uiDeletion{}
		}
		st.Gates = append(st.Gates, ui)
	}
	return st, nil
}

func (d *dashboard) inNamespace() []client.ListOption {
	if d.namespace == "" {
		return nil
	}
	return []client.ListOption{client.InNamespace(d.namespace)}
}

// keepers lists the GateKeepers by the gate they keep. Without them the timeline is the
// default and the requests only, and the page says so.
func (d *dashboard) keepers(ctx context.Context) (map[types.NamespacedName][]gatingv1alpha1.GateKeeper, []skippedKind) {
	list := &gatingv1alpha1.GateKeeperList{}
	if err := d.client.List(ctx, list, d.inNamespace()...); err != nil {
		return nil, []skippedKind{{Kind: gatingv1alpha1.GateKeeperKind,
			Reason: skipReason(err) + ": the timeline leaves their schedules out"}}
	}
	byGate := map[types.NamespacedName][]gatingv1alpha1.GateKeeper{}
	for _, gk := range list.Items {
		key := types.NamespacedName{Namespace: gk.Namespace, Name: gk.Spec.Gate}
		byGate[key] = append(byGate[key], gk)
	}
	return byGate, nil
}

func newUIGate(gate *gatingv1alpha1.Gate, keepers []gatingv1alpha1.GateKeeper, waiting []waitingObject, now time.Time, cals calendarReader) uiGate {
	g := uiGate{
		Namespace:        gate.Namespace,
		Name:             gate.Name,
		State:            stateWord(gate),
		Cause:            stateCause(gate),
		Warning:          keeperFailed(gate),
		Default:          string(gate.Spec.DefaultState()),
		Request:          describeRequest(gate.Status.Request),
		RequestEnd:       requestEnd(gate),
		NextTransitionAt: timeOrDash(gate.Status.NextTransitionAt),
		Pending:          pendingRequests(gate),
		History:          []uiHistory{},
		Waiting:          waiting,
	}
	if g.Waiting == nil {
		g.Waiting = []waitingObject{}
	}
	g.Keepers, g.Timeline, g.TimelineNote = gateTimeline(gate, keepers, now, cals)
	for _, t := range gate.Status.History {
		state := "closed"
		if t.Opened {
			state = "opened"
		}
		g.History = append(g.History, uiHistory{Time: formatTime(t.Time.Time), State: state,
			Cause: orDash(t.Cause), RequestedBy: orDash(t.RequestedBy), Reason: orDash(collapse(t.Reason))})
	}
	return g
}
