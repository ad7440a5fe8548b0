package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/approval"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

const (
	// ControllerName is the field owner and event source of the gating-controller.
	ControllerName = "gating-controller"

	// ReconciliationSucceededReason is the reason of the Opened condition (docs/gate.md).
	ReconciliationSucceededReason = "ReconciliationSucceeded"

	// GateOpenedReason and GateClosedReason are the event reasons of transitions.
	GateOpenedReason = "GateOpened"
	GateClosedReason = "GateClosed"
	// InvalidRequestReason is the Warning event reason of a request that was ignored.
	InvalidRequestReason = "InvalidRequest"

	defaultGateInterval = time.Hour
	historyLimit        = 10
)

// GateReconciler keeps each Gate's Opened condition true to its requests, keepers and default.
type GateReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
	// Clock is the time source; tests drive it.
	Clock clock.PassiveClock
	// Metrics records the gotk_reconcile_condition gauges (Ready, Reconciling, Stalled) Flux's
	// dashboards read; nil records none.
	Metrics *conditiongauge.Gauges
	// apiReader reads the keepers' calendar ConfigMaps and sources (SetupWithManager sets it).
	apiReader client.Reader
	// Artifacts downloads the artifacts of calendars read from sources (NewCalendarFetcher);
	// nil uses one of its own.
	Artifacts *artifact.Fetcher
	// watched are the source kinds watched (SetupWithManager sets them).
	watched watchedSources
	// Notifier takes the gate's events for the GateNotifications; nil sends none.
	Notifier Notifier
	// approvals are the approval changes announced, sent once each.
	approvals announcements
}

// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates;gatekeepers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates/status;gatekeepers/status,verbs=get;update;patch

func (r *GateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	gate := &gatingv1.Gate{}
	if err := r.Get(ctx, req.NamespacedName, gate); err != nil {
		if apierrors.IsNotFound(err) {
			forgetGateMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rec := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: ControllerName}.Begin(ctx, gate, status.Fields{
		ObservedGeneration: &gate.Status.ObservedGeneration, LastHandledReconcileAt: &gate.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	// A Gate leaves nothing behind (no finalizer) and cannot be suspended: a gate is the switch.
	if done, err := rec.Preamble(status.Preamble{}); done {
		return ctrl.Result{}, err
	}

	keepers, err := r.keepersOf(ctx, gate)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.reportKeeperFailures(ctx, gate, keepers)
	now := r.Clock.Now()
	applied, pending := r.handleRequests(ctx, gate, keepers, now)
	approvalOut, err := r.reconcileApproval(ctx, gate, keepers, now, pending)
	if err != nil {
		return ctrl.Result{}, err
	}

	in := newGateInputs(gate, keepers)
	decision := in.decide(now)
	if applied && decision.cause == "default" && gate.Status.Request.State == decision.state {
		// A request for the default state caused this: history and events say so.
		decision.cause = "request"
	}
	r.record(ctx, gate, decision, now)
	r.markReady(gate, in, decision)

	requeue := jitter.JitteredIntervalDuration(gateInterval(gate))
	for _, k := range keepers {
		// A calendar whose source no watch may report on (a failed download).
		if k.retry > 0 && k.retry < requeue {
			requeue = k.retry
		}
	}
	if decision.next != nil {
		// Wake up right at the transition, a little after so the new state is in force.
		if d := decision.next.Sub(now) + 100*time.Millisecond; d < requeue {
			requeue = d
		}
	}
	if approvalOut.next != nil {
		// An approval expires: the progress of the pending request changes.
		if d := approvalOut.next.Sub(now) + 100*time.Millisecond; d < requeue {
			requeue = d
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// keepersOf returns the GateKeepers of the gate, by name. Invalid ones come with their error:
// they are Stalled in their own status, and hold the gate closed when they could close it
// (failsClosed).
func (r *GateReconciler) keepersOf(ctx context.Context, gate *gatingv1.Gate) ([]compiledKeeper, error) {
	list := &gatingv1.GateKeeperList{}
	if err := r.List(ctx, list, client.InNamespace(gate.Namespace), client.MatchingFields{gateKeeperGateIndex: gate.Name}); err != nil {
		return nil, fmt.Errorf("listing the GateKeepers of the gate: %w", err)
	}
	keepers := make([]compiledKeeper, 0, len(list.Items))
	now := r.Clock.Now()
	rd := keeper.CalendarReader{Client: readerOr(r.apiReader, r.Client), Fetcher: r.Artifacts}
	for _, gk := range list.Items {
		s, stale, err := keeper.CompileObject(ctx, rd, &gk, now)
		if err != nil && keeper.IsTransient(err) {
			return nil, err
		}
		k := compiledKeeper{name: gk.Name, schedule: s, err: err, failsClosed: err != nil && failsClosed(gk.Spec),
			retry: soonest(r.watched.retry(&gk), keeper.WatchlessRetry(err))}
		if stale != nil {
			k.retry = soonest(k.retry, keeper.DownloadRetry)
		}
		keepers = append(keepers, k)
	}
	sort.Slice(keepers, func(i, j int) bool { return keepers[i].name < keepers[j].name })
	return keepers, nil
}

// reportKeeperFailures sets the KeeperFailed condition and warns once per new failure.
func (r *GateReconciler) reportKeeperFailures(ctx context.Context, gate *gatingv1.Gate, keepers []compiledKeeper) {
	failed, recovered := markKeeperFailed(gate, keepers)
	switch {
	case failed != "":
		log.FromContext(ctx).Info(failed)
		r.EventRecorder.Event(gate, corev1.EventTypeWarning, InvalidScheduleReason, failed)
		r.notifyKeeperFailed(gate, keepers, failed)
	case recovered:
		r.EventRecorder.Event(gate, corev1.EventTypeNormal, KeeperRecoveredReason,
			"every GateKeeper of the gate can be evaluated again")
	}
}

// handleRequests applies the new requests of the gate's annotations, warns about those it
// ignores, and says whether one was applied, and whether an open request became pending approval
// (a gate with spec.approval).
func (r *GateReconciler) handleRequests(ctx context.Context, gate *gatingv1.Gate, keepers []compiledKeeper, now time.Time) (applied, pending bool) {
	requests, warnings := takeRequests(gate, now)
	in := newGateInputs(gate, keepers)
	keeperState, _ := in.KeeperState(now)
	for _, req := range requests {
		if gate.Spec.Approval != nil && req.state == gatingv1.GateOpened {
			ok, why := approval.Pend(&gate.Status, pendingRequest(req))
			if !ok {
				warnings = append(warnings, why)
			}
			pending = pending || ok
			continue
		}
		if gate.Spec.Approval != nil && approval.Withdraw(gate.Status.Approval, req.at) {
			pending = false
		}
		ok, why := applyRequest(gate, req, keeperState)
		if !ok {
			warnings = append(warnings, why)
		}
		applied = applied || ok
	}
	for _, w := range warnings {
		log.FromContext(ctx).Info(w)
		r.EventRecorder.Event(gate, corev1.EventTypeWarning, InvalidRequestReason, w)
	}
	return applied, pending
}

// record writes the decision into the status and, when the gate changes state, into the history,
// an event, a log line and the metrics.
func (r *GateReconciler) record(ctx context.Context, gate *gatingv1.Gate, d gateDecision, now time.Time) {
	// The history, not the Opened condition, says what was recorded last: a status whose
	// condition got ahead of its history (written in two requests, as this controller once
	// did, and stopped in between) still gets the transition recorded.
	changed := len(gate.Status.History) == 0 || gate.Status.History[0].Opened != d.opened()
	var previous *gatingv1.GateTransition
	if len(gate.Status.History) > 0 {
		previous = gate.Status.History[0].DeepCopy()
	}

	if d.opened() {
		conditions.MarkTrue(gate, gatesapi.OpenedCondition, ReconciliationSucceededReason, "%s", d.message)
	} else {
		conditions.MarkFalse(gate, gatesapi.OpenedCondition, ReconciliationSucceededReason, "%s", d.message)
	}
	// What consumers read to know that the gate is opened for one revision only (shared/gates).
	gate.Status.OpenedForRevision = d.revision
	if d.next != nil {
		t := metav1.NewTime(*d.next)
		gate.Status.NextTransitionAt = &t
	} else {
		gate.Status.NextTransitionAt = nil
	}
	gateOpen.WithLabelValues(gate.Namespace, gate.Name).Set(boolGauge(d.opened()))
	if !changed {
		return
	}

	entry := gatingv1.GateTransition{
		Time: metav1.NewTime(now), Opened: d.opened(), Cause: d.cause, Reason: d.reason, RequestedBy: d.requestedBy,
		ApprovedBy: d.approvedBy,
	}
	gate.Status.History = append([]gatingv1.GateTransition{entry}, gate.Status.History...)
	if len(gate.Status.History) > historyLimit {
		gate.Status.History = gate.Status.History[:historyLimit]
	}
	gateTransitions.WithLabelValues(gate.Namespace, gate.Name, string(d.state)).Inc()

	verb, reason := "closing", GateClosedReason
	if d.opened() {
		verb, reason = "opening", GateOpenedReason
	}
	msg := fmt.Sprintf("%s gate: '%s'", verb, transitionReason(d))
	log.FromContext(ctx).Info(msg, "closed", fmt.Sprint(!d.opened()), "cause", d.cause, "requestedBy", d.requestedBy)
	event := d.message + " (" + d.cause
	if d.requestedBy != "" {
		event += ", requested by " + d.requestedBy
	}
	if len(d.approvedBy) > 0 {
		event += ", approved by " + strings.Join(d.approvedBy, ", ")
	}
	if d.reason != "" {
		event += ": " + d.reason
	}
	r.EventRecorder.Event(gate, corev1.EventTypeNormal, reason, event+")")
	r.notifyTransition(gate, d, previous, now, event+")")
}

// markReady sets Ready with the cause of the gate's state. A broken GateKeeper makes it False
// (reason InvalidSchedule): the gate is evaluated, but not as its keepers were meant to keep it.
func (r *GateReconciler) markReady(gate *gatingv1.Gate, in gateInputs, d gateDecision) {
	msg := in.cause(d) + approval.Note(gate.Spec.Approval, gate.Status.Approval)
	if conditions.IsTrue(gate, KeeperFailedCondition) {
		if !d.broken {
			msg += "; a GateKeeper of the gate cannot be evaluated (see KeeperFailed)"
		}
		conditions.MarkFalse(gate, meta.ReadyCondition, InvalidScheduleReason, "%s", msg)
		return
	}
	conditions.MarkTrue(gate, meta.ReadyCondition, meta.SucceededReason, "%s", msg)
}

// transitionReason is what the log line of a transition quotes: the request's reason when given.
func transitionReason(d gateDecision) string {
	if d.reason != "" {
		return d.reason
	}
	return d.message
}

func gateInterval(gate *gatingv1.Gate) time.Duration {
	if gate.Spec.Interval != nil && gate.Spec.Interval.Duration > 0 {
		return gate.Spec.Interval.Duration
	}
	return defaultGateInterval
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
