package keeper

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ss "github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper/calendar"
)

const xmas = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n" +
	"BEGIN:VEVENT\r\nUID:xmas\r\nSUMMARY:Christmas\r\nDTSTART;VALUE=DATE:20241224\r\nDTEND;VALUE=DATE:20241227\r\n" +
	"RRULE:FREQ=YEARLY\r\nEXDATE;VALUE=DATE:20271224\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"

func compileCal(t *testing.T, spec v1alpha1.GateKeeperSpec, doc string, now time.Time) *Keeper {
	t.Helper()
	var cal *calendar.Calendar
	if doc != "" {
		loc, _ := time.LoadLocation(spec.TimeZone)
		c, err := calendar.Parse([]byte(doc), loc)
		if err != nil {
			t.Fatal(err)
		}
		cal = c
	}
	k, err := Compile(spec, cal, now)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func transitions(k *Keeper, from, until time.Time) string {
	ts, _ := k.Transitions(from, until, 100)
	var out []string
	for _, t := range ts {
		out = append(out, t.At.UTC().Format(time.RFC3339)+" "+string(t.Holds))
	}
	return strings.Join(out, ", ")
}

func TestCalendarKeeper(t *testing.T) {
	g := NewWithT(t)
	now := ts("2026-12-01T00:00:00Z")
	spec := v1alpha1.GateKeeperSpec{Gate: "g", TimeZone: "Europe/Berlin",
		Calendar: &v1alpha1.Calendar{ConfigMapRef: &v1alpha1.ConfigMapKeyRef{Name: "c", Key: "k"}}}
	k := compileCal(t, spec, xmas, now)
	g.Expect(k.Holds(now)).To(Equal(ss.Opened))
	next, ok := k.NextTransition(now)
	g.Expect(ok).To(BeTrue())
	g.Expect(next).To(Equal(ts("2026-12-23T23:00:00Z")))
	g.Expect(transitions(k, now, ts("2029-01-01T00:00:00Z"))).To(Equal(
		"2026-12-23T23:00:00Z closed, 2026-12-26T23:00:00Z opened, " +
			"2028-12-23T23:00:00Z closed, 2028-12-26T23:00:00Z opened"))
	g.Expect(k.Label(ts("2026-12-24T12:00:00Z"))).To(Equal("Christmas"))

	// Runway: closed six hours early; a cron freeze's closing moves too.
	spec.Runway = &metav1.Duration{Duration: 6 * time.Hour}
	spec.CronJob = &v1alpha1.CronJob{Closed: []string{"* * 20-30 11 *"}}
	k = compileCal(t, spec, xmas, ts("2026-11-01T00:00:00Z"))
	g.Expect(transitions(k, ts("2026-11-01T00:00:00Z"), ts("2027-01-01T00:00:00Z"))).To(Equal(
		"2026-11-19T17:00:00Z closed, 2026-11-30T23:00:00Z opened, " +
			"2026-12-23T17:00:00Z closed, 2026-12-26T23:00:00Z opened"))
	g.Expect(k.Holds(ts("2026-12-23T16:59:59Z"))).To(Equal(ss.Opened))
	g.Expect(k.Holds(ts("2026-12-23T17:00:00Z"))).To(Equal(ss.Closed))
	g.Expect(k.Label(ts("2026-12-23T17:00:00Z"))).To(Equal("Christmas"))
}

// Periods, and a runway that bridges a gap shorter than itself.
func TestPeriodsAndRunway(t *testing.T) {
	g := NewWithT(t)
	spec := v1alpha1.GateKeeperSpec{Gate: "g", TimeZone: "Europe/Berlin",
		Runway: &metav1.Duration{Duration: 2 * time.Hour},
		Periods: []v1alpha1.Period{
			{Name: "migration", Start: "2026-03-29", End: "2026-03-30"},
			{Start: "2026-03-30T01:00:00+02:00", End: "2026-03-30T02:00:00+02:00"},
			{Name: "launch", Start: "2026-04-10T10:00:00Z", End: "2026-04-10T12:00:00Z", State: v1alpha1.GateOpened},
		}}
	k := compileCal(t, spec, "", time.Time{})
	g.Expect(transitions(k, ts("2026-03-01T00:00:00Z"), ts("2026-05-01T00:00:00Z"))).To(Equal(
		// 29 March 00:00 CET is 23:00Z; two hours early. The day is 23 hours long (DST);
		// the second period begins an hour after the first ends, within the runway.
		"2026-03-28T21:00:00Z closed, 2026-03-30T00:00:00Z none, " +
			"2026-04-10T10:00:00Z opened, 2026-04-10T12:00:00Z none"))
	_, err := Compile(v1alpha1.GateKeeperSpec{Gate: "g", Periods: []v1alpha1.Period{{Start: "soon", End: "2026-01-01"}}}, nil, time.Time{})
	g.Expect(err).To(MatchError("spec.periods[0].start: invalid time 'soon': want RFC 3339 (2026-12-24T18:00:00+01:00) or a date (2026-12-24)"))
}

// A cron keeper is unchanged by a zero runway and unaffected otherwise.
func TestRunwayOnWindows(t *testing.T) {
	g := NewWithT(t)
	spec := specOf("Europe/London", nil, nil, window("0 18 * * FRI", "63h", v1alpha1.GateClosed))
	spec.Runway = &metav1.Duration{Duration: 90 * time.Minute}
	k := compileCal(t, spec, "", time.Time{})
	next, ok := k.NextTransition(ts("2026-10-23T12:00:00Z"))
	g.Expect(ok).To(BeTrue())
	g.Expect(next).To(Equal(ts("2026-10-23T15:30:00Z")))
	g.Expect(k.At(ts("2026-10-23T15:30:00Z"))).To(Equal(ss.Closed))
	next, _ = k.NextTransition(ts("2026-10-23T15:30:00Z"))
	g.Expect(next).To(Equal(ts("2026-10-26T09:00:00Z")))
}
