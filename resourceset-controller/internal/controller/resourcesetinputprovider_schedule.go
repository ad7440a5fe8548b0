package controller

import (
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/schedule"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// InvalidScheduleReason is the reason of Ready=False (and Stalled) for a spec.schedule that
// does not compile; SkippedDueToScheduleReason that of a provider that has not fetched yet
// because it is outside its windows.
const (
	InvalidScheduleReason      = "InvalidSchedule"
	SkippedDueToScheduleReason = "SkippedDueToSchedule"
)

// providerSchedule is a provider's spec.schedule, compiled with the semantics every Sluice
// schedule shares (shared/schedule: DST, bounded work). A window of 0s is its cron
// expression's minute.
type providerSchedule struct {
	entries []scheduleEntry
}

type scheduleEntry struct {
	spec   rsv1.Schedule
	keeper *schedule.Keeper
}

// compileSchedule compiles spec.schedule; nil without one. A window must be 0s or at least
// twice the timeout, so that a fetch started inside a window ends inside it.
func compileSchedule(obj *rsv1.ResourceSetInputProvider) (*providerSchedule, error) {
	if len(obj.Spec.Schedule) == 0 {
		return nil, nil
	}
	ps := &providerSchedule{}
	for i, s := range obj.Spec.Schedule {
		field := fmt.Sprintf("spec.schedule[%d]", i)
		spec := schedule.Spec{TimeZone: s.TimeZone, TimeZoneField: field + ".timeZone"}
		switch w := s.Window.Duration; {
		case w == 0:
			spec.Expressions = []schedule.Expressions{{Field: field + ".cron", State: schedule.Opened, Exprs: []string{s.Cron}}}
		case w < 2*obj.GetTimeout():
			return nil, fmt.Errorf("%s.window: %s is shorter than twice the timeout (%s): a fetch could outlast it", field, w, obj.GetTimeout())
		default:
			spec.Windows = []schedule.Window{{Field: field, CronField: field + ".cron", DurationField: field + ".window",
				State: schedule.Opened, Cron: s.Cron, Duration: w}}
		}
		k, err := schedule.Compile(spec)
		if err != nil {
			return nil, err
		}
		ps.entries = append(ps.entries, scheduleEntry{spec: s, keeper: k})
	}
	return ps, nil
}

// allows says whether the provider may fetch at t: inside a window that still holds
// t+timeout. On a request (a spec change, a reconcile request, a start, the requeue at a
// scheduled time), a schedule with a 0s window lets it fetch too: its cron times are when the
// provider comes back, not a window.
func (ps *providerSchedule) allows(t time.Time, timeout time.Duration, request bool) bool {
	for _, e := range ps.entries {
		if e.spec.Window.Duration == 0 {
			if request {
				return true
			}
			continue
		}
		if e.keeper.Holds(t.Add(timeout)) == schedule.Opened {
			return true
		}
	}
	return false
}

// next is the next time after now at which a schedule lets the provider fetch (a window's
// opening, a 0s window's cron time), with that schedule; false when none does within the
// horizon.
func (ps *providerSchedule) next(now time.Time) (*rsv1.NextSchedule, bool) {
	var best *rsv1.NextSchedule
	for _, e := range ps.entries {
		t, ok := nextOpening(e.keeper, now)
		if !ok {
			continue
		}
		if best == nil || t.Before(best.When.Time) {
			best = &rsv1.NextSchedule{Schedule: e.spec, When: metav1.NewTime(t)}
		}
	}
	return best, best != nil
}

// nextOpening is the first instant after now at which k turns opened.
func nextOpening(k *schedule.Keeper, now time.Time) (time.Time, bool) {
	t := now
	for range 3 { // closed -> opened, or opened -> closed -> opened
		next, ok := k.NextTransition(t)
		if !ok {
			return time.Time{}, false
		}
		if k.Holds(next) == schedule.Opened && next.After(now) {
			return next, true
		}
		t = next
	}
	return time.Time{}, false
}

// forced says whether the provider is asked to fetch outside its schedule: forceAt equal to a
// new requestedAt, as `flux-operator reconcile inputprovider --force` writes them.
func forced(obj *rsv1.ResourceSetInputProvider) (string, bool) {
	a := obj.GetAnnotations()
	at, ok := a[meta.ForceRequestAnnotation]
	return at, ok && at != "" && at == a[meta.ReconcileRequestAnnotation] && at != obj.Status.LastHandledForceAt
}
