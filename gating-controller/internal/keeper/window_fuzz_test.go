package keeper

import (
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ss "github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// FuzzWindow parses a GateKeeper with one fuzzed window (schedule, duration, state) and,
// optionally, a fuzzed bare expression of either state. A refusal names a field; an accepted
// keeper obeys the laws of NextTransition, and a window alone, in a zone without DST, is
// active exactly from each activation robfig/cron's Schedule.Next gives until activation +
// duration.
func FuzzWindow(f *testing.F) {
	for _, s := range []struct {
		schedule string
		d        time.Duration
		state    v1alpha1.GateState
		bare     string
	}{
		{"0 18 * * FRI", 63 * time.Hour, v1alpha1.GateClosed, ""},
		{"30 1 * * *", 20 * time.Minute, v1alpha1.GateClosed, "* 2-3 * * *"},
		{"0 * * * *", 90 * time.Minute, v1alpha1.GateOpened, ""},
		{"*/2 0-5 * * *", time.Minute, v1alpha1.GateClosed, "1-59/2 0-5 * * *"},
		{"* * * * *", 8760 * time.Hour, v1alpha1.GateClosed, "* * * * *"},
		{"0 0 1 1 *", 2000000 * time.Hour, v1alpha1.GateClosed, ""},
		{"0 0 * * *", 24 * time.Hour, v1alpha1.GateOpened, "0 9 * * mon-fri"},
		{"0 9 * * *", 1500 * time.Millisecond, v1alpha1.GateClosed, ""},
		{"0 0 29 2 *", 48 * time.Hour, v1alpha1.GateOpened, ""},
		{"0 25 * * *", time.Hour, v1alpha1.GateClosed, "nope"},
		{"@daily", 0, "ajar", ""},
		{"@every 1h", -time.Hour, v1alpha1.GateClosed, ""},
	} {
		f.Add(s.schedule, int64(s.d), string(s.state), s.bare, false, uint8(0), int64(1779872400)) // 2026-05-27T09:00:00Z
		f.Add(s.schedule, int64(s.d), string(s.state), s.bare, true, uint8(3), int64(1793512800))  // 2026-11-01T06:00:00Z, New York's fall back
	}
	f.Fuzz(func(t *testing.T, schedule string, d int64, state, bare string, bareOpened bool, zone uint8, sec int64) {
		if len(schedule)+len(state)+len(bare) > 256 {
			return
		}
		tz := fuzzZones[int(zone)%len(fuzzZones)]
		at := fuzzInstant(sec)
		window := v1alpha1.Window{Schedule: schedule, Duration: metav1.Duration{Duration: time.Duration(d)}, State: v1alpha1.GateState(state)}
		var closed, opened []string
		switch {
		case bare == "":
		case bareOpened:
			opened = []string{bare}
		default:
			closed = []string{bare}
		}
		k, err := Parse(specOf(tz, closed, opened, window))
		if err != nil {
			// Parse joins one error per problem.
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				if !strings.HasPrefix(e.Error(), "spec.windows[0].") && !strings.HasPrefix(e.Error(), "spec.cronjob.") {
					t.Fatalf("the error does not name the field: %q", e)
				}
			}
			return
		}
		checkNextTransition(t, k, at)
		if bare != "" || !fixedOffset(tz) {
			return
		}
		sched, err := cron.ParseStandard(strings.TrimSpace(schedule))
		if err != nil {
			t.Fatalf("%q: accepted by Parse, refused by robfig/cron: %v", schedule, err)
		}
		s := sched.(*cron.SpecSchedule)
		s.Location = k.Location()
		// The activation after at-d, if it is not after at, started a window still open at at.
		a := nextActivation(s, at.Add(-time.Duration(d)), at)
		inside := !a.IsZero() && !a.After(at)
		want := ss.None
		if inside {
			want = ss.State(state)
		}
		if got := k.At(at); got != want {
			t.Fatalf("%q for %s in %q at %s: At gives %q, want %q (activation %s)", schedule, time.Duration(d), tz, at, got, want, a)
		}
	})
}

// nextActivation is s.Next(from), looking as far as to: Next gives up five years after from.
func nextActivation(s *cron.SpecSchedule, from, to time.Time) time.Time {
	for {
		a := s.Next(from)
		if !a.IsZero() || !from.Before(to) {
			return a
		}
		from = from.AddDate(4, 0, 0) // Next found nothing within its five years, so none in these four
	}
}
