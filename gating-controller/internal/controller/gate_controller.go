package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
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
	"github.com/sluice-gitops/sluice/shared/dependency"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/approval"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
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
	// Clients read the objects of spec.promotion and spec.checks as spec.serviceAccountName;
	// nil reads them with the controller's permissions.
	Clients *impersonation.Clients
	// checkCache holds the compiled expressions of spec.checks.
	checkCache     *dependency.Cache
	checkCacheOnce sync.Once
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
	checksRequeue := r.reconcileChecks(ctx, gate)
	promoted, promotionRequeue := r.reconcilePromotion(ctx, gate, now)
	applied, pending := r.handleRequests(ctx, gate, keepers, now, promoted)
	approvalOut, err := r.reconcileApproval(ctx, gate, keepers, now, pending)
	if err != nil {
		return ctrl.Result{}, err
	}

	in := gatestate.NewInputs(gate, keepers)
	decision := in.Decide(now)
	if applied && decision.Cause == "default" && gate.Status.Request.State == decision.State {
		// A request for the default state caused this: history and events say so.
		decision.Cause = "request"
	}
	r.record(ctx, gate, decision, now)
	r.markReady(gate, in, decision)

	requeue := jitter.JitteredIntervalDuration(gateInterval(gate))
	for _, k := range keepers {
		// A calendar whose source no watch may report on (a failed download).
		if k.Retry > 0 && k.Retry < requeue {
			requeue = k.Retry
		}
	}
	if decision.Next != nil {
		// Wake up right at the transition, a little after so the new state is in force.
		if d := decision.Next.Sub(now) + 100*time.Millisecond; d < requeue {
			requeue = d
		}
	}
	for _, d := range []time.Duration{checksRequeue, promotionRequeue} {
		// spec.checks and spec.promotion read objects that no watch reports on.
		if d > 0 && d < requeue {
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
func (r *GateReconciler) keepersOf(ctx context.Context, gate *gatingv1.Gate) ([]gatestate.Keeper, error) {
	list := &gatingv1.GateKeeperList{}
	if err := r.List(ctx, list, client.InNamespace(gate.Namespace), client.MatchingFields{gateKeeperGateIndex: gate.Name}); err != nil {
		return nil, fmt.Errorf("listing the GateKeepers of the gate: %w", err)
	}
	keepers := make([]gatestate.Keeper, 0, len(list.Items))
	now := r.Clock.Now()
	rd := keeper.CalendarReader{Client: readerOr(r.apiReader, r.Client), Fetcher: r.Artifacts}
	for _, gk := range list.Items {
		s, stale, err := keeper.CompileObject(ctx, rd, &gk, now)
		if err != nil && keeper.IsTransient(err) {
			return nil, err
		}
		k := gatestate.Keeper{Name: gk.Name, Schedule: s, Err: err, FailsClosed: err != nil && failsClosed(gk.Spec),
			Retry: soonest(r.watched.retry(&gk), keeper.WatchlessRetry(err))}
		if stale != nil {
			k.Retry = soonest(k.Retry, keeper.DownloadRetry)
		}
		keepers = append(keepers, k)
	}
	sort.Slice(keepers, func(i, j int) bool { return keepers[i].Name < keepers[j].Name })
	return keepers, nil
}

// reportKeeperFailures sets the KeeperFailed condition and warns once per new failure.
func (r *GateReconciler) reportKeeperFailures(ctx context.Context, gate *gatingv1.Gate, keepers []gatestate.Keeper) {
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

// handleRequests applies the new requests of the gate's annotations and of its promotion, warns
// about those it ignores, and says whether one was applied, and whether an open request became pending approval
// (a gate with spec.approval).
func (r *GateReconciler) handleRequests(ctx context.Context, gate *gatingv1.Gate, keepers []gatestate.Keeper, now time.Time,
	promoted *gatestate.Request) (applied, pending bool) {
	requests, warnings := gatestate.TakeRequests(gate, now)
	if promoted != nil {
		// The open request of a promotion: after the annotations' requests of the same instant.
		requests = append(requests, *promoted)
	}
	in := gatestate.NewInputs(gate, keepers)
	keeperState, _ := in.KeeperState(now)
	for _, req := range requests {
		if gate.Spec.Approval != nil && req.State == gatingv1.GateOpened {
			ok, why := approval.Pend(&gate.Status, pendingRequest(req))
			if !ok {
				warnings = append(warnings, why)
			}
			pending = pending || ok
			continue
		}
		if gate.Spec.Approval != nil && approval.Withdraw(gate.Status.Approval, req.At) {
			pending = false
		}
		ok, why := gatestate.ApplyRequest(gate, req, keeperState)
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
func (r *GateReconciler) record(ctx context.Context, gate *gatingv1.Gate, d gatestate.Decision, now time.Time) {
	// The history, not the Opened condition, says what was recorded last: a status whose
	// condition got ahead of its history (written in two requests, as this controller once
	// did, and stopped in between) still gets the transition recorded.
	changed := len(gate.Status.History) == 0 || gate.Status.History[0].Opened != d.Opened()
	var previous *gatingv1.GateTransition
	if len(gate.Status.History) > 0 {
		previous = gate.Status.History[0].DeepCopy()
	}

	if d.Opened() {
		conditions.MarkTrue(gate, gatesapi.OpenedCondition, ReconciliationSucceededReason, "%s", d.Message)
	} else {
		conditions.MarkFalse(gate, gatesapi.OpenedCondition, ReconciliationSucceededReason, "%s", d.Message)
	}
	// What consumers read to know that the gate is opened for one revision only (shared/gates).
	gate.Status.OpenedForRevision = d.Revision
	if d.Next != nil {
		t := metav1.NewTime(*d.Next)
		gate.Status.NextTransitionAt = &t
	} else {
		gate.Status.NextTransitionAt = nil
	}
	gateOpen.WithLabelValues(gate.Namespace, gate.Name).Set(boolGauge(d.Opened()))
	if !changed {
		return
	}

	entry := gatingv1.GateTransition{
		Time: metav1.NewTime(now), Opened: d.Opened(), Cause: d.Cause, Reason: d.Reason, RequestedBy: d.RequestedBy,
		ApprovedBy: d.ApprovedBy,
	}
	gate.Status.History = append([]gatingv1.GateTransition{entry}, gate.Status.History...)
	if len(gate.Status.History) > historyLimit {
		gate.Status.History = gate.Status.History[:historyLimit]
	}
	gateTransitions.WithLabelValues(gate.Namespace, gate.Name, string(d.State)).Inc()

	verb, reason := "closing", GateClosedReason
	if d.Opened() {
		verb, reason = "opening", GateOpenedReason
	}
	msg := fmt.Sprintf("%s gate: '%s'", verb, transitionReason(d))
	log.FromContext(ctx).Info(msg, "closed", fmt.Sprint(!d.Opened()), "cause", d.Cause, "requestedBy", d.RequestedBy)
	event := d.Message + " (" + d.Cause
	if d.RequestedBy != "" {
		event += ", requested by " + d.RequestedBy
	}
	if len(d.ApprovedBy) > 0 {
		event += ", approved by " + strings.Join(d.ApprovedBy, ", ")
	}
	if d.Reason != "" {
		event += ": " + d.Reason
	}
	r.EventRecorder.Event(gate, corev1.EventTypeNormal, reason, event+")")
	r.notifyTransition(gate, d, previous, now, event+")")
}

// markReady sets Ready with the cause of the gate's state. A broken GateKeeper makes it False
// (reason InvalidSchedule): the gate is evaluated, but not as its keepers were meant to keep it.
func (r *GateReconciler) markReady(gate *gatingv1.Gate, in gatestate.Inputs, d gatestate.Decision) {
	msg := in.Cause(d) + approval.Note(gate.Spec.Approval, gate.Status.Approval)
	if conditions.IsTrue(gate, KeeperFailedCondition) {
		if !d.Broken {
			msg += "; a GateKeeper of the gate cannot be evaluated (see KeeperFailed)"
		}
		conditions.MarkFalse(gate, meta.ReadyCondition, InvalidScheduleReason, "%s", msg)
		return
	}
	conditions.MarkTrue(gate, meta.ReadyCondition, meta.SucceededReason, "%s", msg)
}

// transitionReason is what the log line of a transition quotes: the request's reason when given.
func transitionReason(d gatestate.Decision) string {
	if d.Reason != "" {
		return d.Reason
	}
	return d.Message
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
