package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kuberecorder "k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

const (
	// InvalidScheduleReason: a cron expression, window or time zone does not parse.
	InvalidScheduleReason = "InvalidSchedule"
	// GateNotFoundReason: the keeper's gate does not exist (yet).
	GateNotFoundReason = "GateNotFound"
)

// GateKeeperReconciler reports what each GateKeeper does to its gate now and next.
type GateKeeperReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
	Clock  clock.PassiveClock
	// Metrics records the gotk_reconcile_condition gauges (Ready, Reconciling, Stalled) Flux's
	// dashboards read; nil records none.
	Metrics *conditiongauge.Gauges
	// Artifacts downloads the artifacts of calendars read from sources (NewCalendarFetcher);
	// nil uses one of its own.
	Artifacts *artifact.Fetcher
	// apiReader reads the calendar ConfigMaps and sources (SetupWithManager sets it).
	apiReader client.Reader
	// watched are the source kinds watched (SetupWithManager sets them).
	watched watchedSources
}

func (r *GateKeeperReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	gk := &gatingv1.GateKeeper{}
	if err := r.Get(ctx, req.NamespacedName, gk); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rec := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: ControllerName}.Begin(ctx, gk, status.Fields{
		ObservedGeneration: &gk.Status.ObservedGeneration, LastHandledReconcileAt: &gk.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	// A GateKeeper leaves nothing behind (no finalizer) and cannot be suspended.
	if done, err := rec.Preamble(status.Preamble{}); done {
		return ctrl.Result{}, err
	}

	now := r.Clock.Now()
	k, stale, err := keeper.CompileObject(ctx, keeper.CalendarReader{Client: readerOr(r.apiReader, r.Client), Fetcher: r.Artifacts}, gk, now)
	switch {
	case err != nil && keeper.IsCalendarError(err):
		// Not stalled: the ConfigMap or source may appear or be fixed without a change of the
		// keeper, and the watch on them brings the keeper back then.
		r.markBroken(gk, CalendarFailedReason, "calendar cannot be read", err)
		return ctrl.Result{RequeueAfter: keeper.KeeperRetry(err)}, nil
	case err != nil && keeper.IsTransient(err):
		return ctrl.Result{}, err
	case err != nil:
		// A spec nobody can retry: Finalize marks the keeper Stalled with Ready's reason and
		// message, and observes the generation all the same.
		r.markBroken(gk, InvalidScheduleReason, "invalid schedule", err)
		return ctrl.Result{}, reconcile.TerminalError(err)
	}

	gk.Status.Active = gatingv1.GateKeeperActive(k.Holds(now))
	gk.Status.NextTransitionAt = nil
	result = ctrl.Result{}
	if next, ok := k.NextTransition(now); ok {
		t := metav1.NewTime(next)
		gk.Status.NextTransitionAt = &t
		result.RequeueAfter = next.Sub(now) + 100*time.Millisecond
	}
	if gk.Spec.Calendar != nil && (result.RequeueAfter == 0 || result.RequeueAfter > keeper.CalendarRefresh) {
		// A calendar is known over the horizon from now only: look again now and then.
		result.RequeueAfter = keeper.CalendarRefresh
	}
	result.RequeueAfter = soonest(result.RequeueAfter, r.watched.retry(gk))
	var staleNote string
	if stale != nil {
		// The calendar of an earlier artifact decides until the current one downloads.
		staleNote = "; " + stale.Note
		r.EventRecorder.Event(gk, corev1.EventTypeWarning, CalendarStaleReason, stale.Note)
		result.RequeueAfter = soonest(result.RequeueAfter, keeper.DownloadRetry)
	}

	gate := &gatingv1.Gate{}
	key := types.NamespacedName{Namespace: gk.Namespace, Name: gk.Spec.Gate}
	if err := r.Get(ctx, key, gate); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Retried by the watch on Gates when the gate appears.
		conditions.MarkFalse(gk, meta.ReadyCondition, GateNotFoundReason,
			"gate '%s' not found in namespace '%s'; the schedule applies once it exists", gk.Spec.Gate, gk.Namespace)
		return result, nil
	}
	msg := gatestate.KeeperMessage(gk, k.Event(now))
	if o := gatestate.Overriding(gate, gk.Status.Active, now); o != nil {
		// The keeper's schedule is not what decides the gate now: say so rather than claim a
		// state the gate is not in, and look again when the request ends.
		msg = o.Message(gk)
		if o.End != nil && (result.RequeueAfter == 0 || o.End.Sub(now) < result.RequeueAfter) {
			result.RequeueAfter = o.End.Sub(now) + 100*time.Millisecond
		}
	}
	conditions.MarkTrue(gk, meta.ReadyCondition, meta.SucceededReason, "%s", msg+staleNote)
	return result, nil
}

// markBroken marks the keeper not Ready for reason: what cannot be evaluated, and what that
// does to its gate.
func (r *GateKeeperReconciler) markBroken(gk *gatingv1.GateKeeper, reason, what string, err error) {
	effect := "the gate is held closed until it is fixed"
	if !failsClosed(gk.Spec) {
		effect = "the gate is not affected by this GateKeeper"
	}
	msg := fmt.Sprintf("%s, %s: %s", what, effect, err)
	conditions.MarkFalse(gk, meta.ReadyCondition, reason, "%s", msg)
	gk.Status.Active, gk.Status.NextTransitionAt = "", nil
	r.EventRecorder.Event(gk, corev1.EventTypeWarning, reason, msg)
}
