package keeper

import (
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	ss "github.com/sluice-gitops/sluice/shared/schedule"
)

// fuzzZones are the time zones the fuzz tests pick from: fixed offsets, where robfig/cron's
// own Schedule.Next is a trustworthy reference, and zones with DST changes (a 30-minute one at
// Lord Howe) and midnight changes (São Paulo), where only the keeper's own laws are checked.
var fuzzZones = []string{"", "Asia/Kolkata", "Europe/London", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo"}

// fixedOffset tells the zones of fuzzZones without DST since 1970.
func fixedOffset(tz string) bool { return tz == "" || tz == "Asia/Kolkata" }

// fuzzInstant maps a fuzzed number onto an instant between 1970 and 2200, at any second.
func fuzzInstant(sec int64) time.Time {
	const span = 230 * 365 * 24 * 3600
	sec %= span
	if sec < 0 {
		sec += span
	}
	return time.Unix(sec, 0).UTC()
}

// FuzzCron parses a fuzzed cron expression as a closed expression of a GateKeeper. A refusal
// names the field; an accepted keeper obeys the laws of NextTransition (see
// checkNextTransition), and in zones without DST it is closed exactly during the minutes at
// which robfig/cron's Schedule.Next, the parser's own library, fires.
func FuzzCron(f *testing.F) {
	for _, e := range []string{
		"* * * * *", "0 9 * * mon-fri", "*/15 9-17 * * 1-5", "* * 20-30 11 *", "0 0 1 jan,jul ?", "0 0 29 2 *",
		"30 2 * * *", "1-59/2 0-5 * * *", "0 18 * * FRI", "* * 31 2 *", "59 23 31 12 *", "0 0 * * 7", "0 0 13 * 5",
		"@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@every 1h", "@reboot", "TZ=UTC 0 9 * * *",
		"CRON_TZ=Europe/Paris 0 9 * * *", "* * * *", "* * * * * *", "*/0 * * * *", "1-2-3 * * * *", "60 * * * *",
		"0 25 * * *", "0-", "a b c d e", "", " \n", "0 0 0 0 0", "0/ * * * *", "5-1 * * * *", "* * ? ? *",
	} {
		f.Add(e, uint8(0), int64(1779872400)) // 2026-05-27T09:00:00Z
		f.Add(e, uint8(2), int64(1792890000)) // 2026-10-25T01:00:00Z, London's fall back
	}
	f.Fuzz(func(t *testing.T, expr string, zone uint8, sec int64) {
		if len(expr) > 256 {
			return
		}
		tz := fuzzZones[int(zone)%len(fuzzZones)]
		at := fuzzInstant(sec)
		k, err := Parse(specOf(tz, []string{expr}, nil))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "spec.cronjob.closed[0]: ") {
				t.Fatalf("%q: the error does not name the field: %v", expr, err)
			}
			return
		}
		checkNextTransition(t, k, at)
		if !fixedOffset(tz) {
			return
		}
		sched, err := cron.ParseStandard(strings.TrimSpace(expr))
		if err != nil {
			t.Fatalf("%q: accepted by Parse, refused by robfig/cron: %v", expr, err)
		}
		s := sched.(*cron.SpecSchedule)
		s.Location = k.Location()
		minute := at.Truncate(time.Minute)
		fires := s.Next(minute.Add(-time.Second)).Equal(minute)
		if got := k.At(at); (got == ss.Closed) != fires {
			t.Fatalf("%q in %q at %s: At gives %q, robfig/cron fires: %t", expr, tz, at, got, fires)
		}
		if next := s.Next(at); !next.IsZero() && k.At(next) != ss.Closed {
			t.Fatalf("%q in %q: robfig/cron fires at %s, At gives %q", expr, tz, next, k.At(next))
		}
	})
}

// checkNextTransition checks the laws of NextTransition at t: a transition is strictly after
// t and within the horizon, At changes there and nowhere before it (probed just before it and
// half-way), and Holds only replaces none.
func checkNextTransition(t *testing.T, k *Keeper, at time.Time) {
	t.Helper()
	state := k.At(at)
	if holds := k.Holds(at); holds != state && state != ss.None {
		t.Fatalf("at %s: At gives %q, Holds %q", at, state, holds)
	}
	next, ok := k.NextTransition(at)
	if !ok {
		return
	}
	if !next.After(at) || next.Sub(at) > Horizon {
		t.Fatalf("at %s: next transition %s is not within (t, t+Horizon]", at, next)
	}
	if got := k.At(next); got == state {
		t.Fatalf("at %s (%q): nothing changes at the next transition %s", at, state, next)
	}
	for _, probe := range []time.Time{next.Add(-time.Nanosecond), at.Add(next.Sub(at) / 2)} {
		if probe.After(at) {
			if got := k.At(probe); got != state {
				t.Fatalf("at %s (%q): the state is %q at %s, before the next transition %s", at, state, got, probe, next)
			}
		}
	}
}
