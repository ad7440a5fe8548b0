package keeper

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/robfig/cron/v3"

	ss "github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// TestAgainstBruteForce compares At and NextTransition with a minute-by-minute reference built
// on robfig/cron's own Schedule.Next, over eight days around DST changes in several zones
// (including Lord Howe's 30-minute shift and São Paulo's midnight changes of 2018).
func TestAgainstBruteForce(t *testing.T) {
	ranges := []struct {
		tz    string
		start string
	}{
		{"UTC", "2026-02-25T00:00:00Z"},
		{"Europe/London", "2026-03-25T00:00:00Z"},
		{"Europe/London", "2026-10-21T00:00:00Z"},
		{"America/New_York", "2026-03-04T00:00:00Z"},
		{"America/New_York", "2026-10-28T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-04-01T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-09-30T00:00:00Z"},
		{"America/Sao_Paulo", "2018-11-01T00:00:00Z"},
		{"America/Sao_Paulo", "2018-02-14T00:00:00Z"},
	}
	specs := []struct {
		closed, opened []string
		windows        []v1alpha1.Window
	}{
		{closed: []string{"* 1 * * *"}, opened: []string{"*/7 0-3 * * *", "* 22 * * *"}},
		{closed: []string{"0 0 * * *", "30 2 * * *"}, opened: []string{"* 0-2 * * SUN"}},
		{windows: []v1alpha1.Window{
			window("30 1 * * *", "20m", v1alpha1.GateClosed),
			window("0 * * * *", "90m", v1alpha1.GateOpened),
		}},
		{opened: []string{"* 2-3 * * *"}, windows: []v1alpha1.Window{
			window("59 0 * * *", "2m", v1alpha1.GateClosed),
			window("0 2 * * *", "1h", v1alpha1.GateOpened),
			window("*/10 1-2 * * SUN", "25m", v1alpha1.GateClosed),
		}},
		{windows: []v1alpha1.Window{window("0 18 * * FRI", "63h", v1alpha1.GateClosed)}},
		{windows: []v1alpha1.Window{window("0 0 * * *", "24h", v1alpha1.GateOpened)}},
		// Closed 00:00-06:00 as a relay of one-minute stretches, opened in between by a window.
		{closed: []string{"1-59/2 0-5 * * *"}, windows: []v1alpha1.Window{
			window("*/2 0-5 * * *", "1m", v1alpha1.GateClosed),
			window("*/5 * * * *", "3m", v1alpha1.GateOpened),
		}},
	}
	for _, r := range ranges {
		for i, s := range specs {
			// robfig's Next mishandles 30-minute DST shifts (it skips or shifts days around Lord
			// Howe's changes), so there the reference finds activations from the parsed fields.
			modes := []bool{false, true}
			if r.tz == "Australia/Lord_Howe" {
				modes = modes[:1]
			}
			for _, useNext := range modes {
				t.Run(fmt.Sprintf("%s/%s/%d/next=%t", r.tz, r.start[:10], i, useNext), func(t *testing.T) {
					g := NewWithT(t)
					spec := specOf(r.tz, s.closed, s.opened, s.windows...)
					k := mustParse(t, spec)
					start := ts(r.start)
					ref := reference(t, spec, start, 8*24*60, useNext)
					// change[m] is the first minute after m in another state (len(ref) if none).
					change := make([]int, len(ref))
					for m := len(ref) - 1; m >= 0; m-- {
						switch {
						case m == len(ref)-1:
							change[m] = len(ref)
						case ref[m+1] != ref[m]:
							change[m] = m + 1
						default:
							change[m] = change[m+1]
						}
					}
					for m := 0; m < len(ref); m += 11 {
						for _, at := range []time.Time{start.Add(time.Duration(m) * time.Minute), start.Add(time.Duration(m)*time.Minute + 17*time.Second)} {
							g.Expect(k.At(at)).To(Equal(ref[m]), "At(%s)", at)
							next, ok := k.NextTransition(at)
							j := change[m]
							if j == len(ref) {
								if ok {
									g.Expect(next).To(BeTemporally(">=", start.Add(time.Duration(j)*time.Minute)), "NextTransition(%s)", at)
								}
								continue
							}
							g.Expect(ok).To(BeTrue(), "NextTransition(%s)", at)
							g.Expect(next).To(BeTemporally("==", start.Add(time.Duration(j)*time.Minute)), "NextTransition(%s)", at)
						}
					}
				})
			}
		}
	}
}

// reference returns the state during each of n minutes from start, found the slow way: every
// minute's local time is checked against the parsed fields, or activations come from robfig's
// Schedule.Next (useNext); windows end at the first minute whose clock reading is late enough.
func reference(t *testing.T, spec v1alpha1.GateKeeperSpec, start time.Time, n int, useNext bool) []ss.State {
	loc, err := time.LoadLocation(spec.TimeZone)
	if err != nil {
		t.Fatal(err)
	}
	end := start.Add(time.Duration(n) * time.Minute)
	index := func(x time.Time) int { return int(x.Sub(start) / time.Minute) }
	// activations returns the instants in [from, to) at which expression e activates.
	activations := func(e string, from, to time.Time) []time.Time {
		sched, err := cron.ParseStandard(e)
		if err != nil {
			t.Fatal(err)
		}
		s := sched.(*cron.SpecSchedule)
		s.Location = loc
		var out []time.Time
		if useNext {
			for a := s.Next(from.Add(-time.Second)); a.Before(to); a = s.Next(a) {
				out = append(out, a)
			}
			return out
		}
		bit := func(mask uint64, v int) bool { return mask&(1<<uint(v)) != 0 }
		for a := from; a.Before(to); a = a.Add(time.Minute) {
			l := a.In(loc)
			if l.Second() != 0 || !bit(s.Minute, l.Minute()) || !bit(s.Hour, l.Hour()) || !bit(s.Month, int(l.Month())) {
				continue
			}
			dom, dow := bit(s.Dom, l.Day()), bit(s.Dow, int(l.Weekday()))
			if s.Dom&(1<<63) != 0 || s.Dow&(1<<63) != 0 {
				if !dom || !dow {
					continue
				}
			} else if !dom && !dow {
				continue
			}
			out = append(out, a)
		}
		return out
	}
	// cover[state][i] counts what holds minute i in that state.
	cover := map[v1alpha1.GateState][]int{v1alpha1.GateClosed: make([]int, n+1), v1alpha1.GateOpened: make([]int, n+1)}
	mark := func(state v1alpha1.GateState, from, to time.Time) {
		if !to.After(start) || !from.Before(end) {
			return
		}
		i, j := max(index(from), 0), min(index(to), n)
		cover[state][i]++
		cover[state][j]--
	}
	bare := map[v1alpha1.GateState][]string{}
	if spec.CronJob != nil {
		bare[v1alpha1.GateClosed], bare[v1alpha1.GateOpened] = spec.CronJob.Closed, spec.CronJob.Opened
	}
	for state, exprs := range bare {
		for _, e := range exprs {
			for _, a := range activations(e, start, end) {
				mark(state, a, a.Add(time.Minute))
			}
		}
	}
	wall := func(x time.Time) time.Time {
		_, off := x.In(loc).Zone()
		return x.Add(time.Duration(off) * time.Second)
	}
	for _, w := range spec.Windows {
		for _, a := range activations(w.Schedule, start.Add(-w.Duration.Duration-48*time.Hour), end) {
			target := wall(a).Add(w.Duration.Duration)
			e := a.Add(time.Minute)
			for wall(e).Before(target) {
				e = e.Add(time.Minute)
			}
			mark(w.State, a, e)
		}
	}
	out := make([]ss.State, n)
	c, o := 0, 0
	for i := range out {
		c += cover[v1alpha1.GateClosed][i]
		o += cover[v1alpha1.GateOpened][i]
		switch {
		case c > 0:
			out[i] = ss.Closed
		case o > 0:
			out[i] = ss.Opened
		default:
			out[i] = ss.None
		}
	}
	return out
}
