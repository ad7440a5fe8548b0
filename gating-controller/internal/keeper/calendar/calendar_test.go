package calendar

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func doc(events ...string) []byte {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Sluice//test//EN\r\n")
	for _, e := range events {
		b.WriteString("BEGIN:VEVENT\r\n")
		for _, l := range strings.Split(strings.TrimSpace(e), "\n") {
			b.WriteString(strings.TrimSpace(l) + "\r\n")
		}
		b.WriteString("END:VEVENT\r\n")
	}
	b.WriteString("END:VCALENDAR\r\n")
	return []byte(b.String())
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// periods formats periods as "start/end summary" in UTC.
func periods(ps []Period) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%s/%s %s", p.Start.UTC().Format(time.RFC3339), p.End.UTC().Format(time.RFC3339), p.Summary)
	}
	return out
}

func expect(t *testing.T, got []Period, want ...string) {
	t.Helper()
	g := periods(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Fatalf("periods:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// A yearly all-day holiday from 24 to 26 December (DTEND is exclusive), in the keeper's time
// zone, with one year taken out by EXDATE.
func TestYearlyAllDayHolidayWithExdate(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	c, err := Parse(doc(`
		UID:xmas@example.com
		SUMMARY:Christmas freeze
		DTSTART;VALUE=DATE:20241224
		DTEND;VALUE=DATE:20241227
		RRULE:FREQ=YEARLY
		EXDATE;VALUE=DATE:20271224`), berlin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2026-01-01T00:00:00Z"), ts(t, "2029-01-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got,
		"2026-12-23T23:00:00Z/2026-12-26T23:00:00Z Christmas freeze",
		"2028-12-23T23:00:00Z/2028-12-26T23:00:00Z Christmas freeze")
}

// A weekly Friday-evening freeze in Europe/Berlin keeps its local hours across the end of
// summer time (Sunday 25 October 2026): 16:00Z in CEST, 17:00Z in CET.
func TestWeeklyTZIDAcrossDST(t *testing.T) {
	c, err := Parse(doc(`
		SUMMARY:Weekend freeze
		DTSTART;TZID=Europe/Berlin:20261016T180000
		DURATION:PT62H
		RRULE:FREQ=WEEKLY;BYDAY=FR;COUNT=3`), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2026-10-01T00:00:00Z"), ts(t, "2026-12-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	// 62h exact: the weekend across the change ends an hour earlier on the wall clock.
	expect(t, got,
		"2026-10-16T16:00:00Z/2026-10-19T06:00:00Z Weekend freeze",
		"2026-10-23T16:00:00Z/2026-10-26T06:00:00Z Weekend freeze",
		"2026-10-30T17:00:00Z/2026-11-02T07:00:00Z Weekend freeze")
}

// An all-day event across the start of summer time lasts whole local days: 23 hours that day.
func TestAllDayAcrossSpringForward(t *testing.T) {
	c, err := Parse(doc(`
		SUMMARY:Quarter close
		DTSTART;VALUE=DATE:20270328
		DURATION:P2D`), mustLoc(t, "Europe/Berlin"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2027-01-01T00:00:00Z"), ts(t, "2028-01-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got, "2027-03-27T23:00:00Z/2027-03-29T22:00:00Z Quarter close")
}

// RDATE adds instances, comma-separated values are all read, an overridden instance
// (RECURRENCE-ID) replaces the one it names, and a cancelled one is dropped.
func TestRdateExdateListAndOverrides(t *testing.T) {
	c, err := Parse(doc(`
		UID:release
		SUMMARY:Release freeze
		DTSTART:20260105T080000Z
		DTEND:20260105T100000Z
		RRULE:FREQ=WEEKLY;COUNT=5
		RDATE:20260108T080000Z,20260109T080000Z
		EXDATE:20260112T080000Z,20260119T080000Z`, `
		UID:release
		SUMMARY:Release freeze (moved)
		RECURRENCE-ID:20260126T080000Z
		DTSTART:20260127T120000Z
		DTEND:20260127T130000Z`, `
		UID:release
		RECURRENCE-ID:20260202T080000Z
		STATUS:CANCELLED
		DTSTART:20260202T080000Z
		DTEND:20260202T100000Z`), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2026-01-01T00:00:00Z"), ts(t, "2026-03-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got,
		"2026-01-05T08:00:00Z/2026-01-05T10:00:00Z Release freeze",
		"2026-01-08T08:00:00Z/2026-01-08T10:00:00Z Release freeze",
		"2026-01-09T08:00:00Z/2026-01-09T10:00:00Z Release freeze",
		"2026-01-27T12:00:00Z/2026-01-27T13:00:00Z Release freeze (moved)")
}

// An unbounded rule is expanded only over the stretch asked for; a period that started before
// it and is still running is included.
func TestUnboundedRuleIsExpandedOverTheStretch(t *testing.T) {
	c, err := Parse(doc(`
		SUMMARY:Nightly
		DTSTART;TZID=Europe/Berlin:20200101T220000
		DTEND;TZID=Europe/Berlin:20200102T060000
		RRULE:FREQ=DAILY`), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2026-07-01T02:00:00Z"), ts(t, "2026-07-02T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got,
		"2026-06-30T20:00:00Z/2026-07-01T04:00:00Z Nightly",
		"2026-07-01T20:00:00Z/2026-07-02T04:00:00Z Nightly")
}

func TestFloatingTimeIsTheKeepersZone(t *testing.T) {
	c, err := Parse(doc(`
		DTSTART:20260601T090000
		DURATION:PT1H`), mustLoc(t, "America/New_York"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2026-01-01T00:00:00Z"), ts(t, "2027-01-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got, "2026-06-01T13:00:00Z/2026-06-01T14:00:00Z ")
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"not ical":       {[]byte("hello"), "invalid iCalendar document: "},
		"no dtstart":     {doc("SUMMARY:x\nDURATION:PT1H"), "VEVENT 'x': DTSTART is missing"},
		"bad tzid":       {doc("SUMMARY:x\nDTSTART;TZID=Mars/Olympus:20260101T000000"), "VEVENT 'x': DTSTART: unknown time zone 'Mars/Olympus': use an IANA name such as Europe/Berlin"},
		"bad rrule":      {doc("SUMMARY:x\nDTSTART:20260101T000000Z\nDURATION:PT1H\nRRULE:FREQ=SOMETIMES"), "VEVENT 'x': RRULE 'FREQ=SOMETIMES': "},
		"bad date":       {doc("UID:u1\nDTSTART;VALUE=DATE:2026-01-01"), "VEVENT with UID 'u1': DTSTART: invalid date '2026-01-01': want YYYYMMDD"},
		"end before":     {doc("SUMMARY:x\nDTSTART:20260102T000000Z\nDTEND:20260101T000000Z"), "VEVENT 'x': DTEND 20260101T000000Z is before DTSTART 20260102T000000Z"},
		"end and dur":    {doc("SUMMARY:x\nDTSTART:20260102T000000Z\nDTEND:20260103T000000Z\nDURATION:PT1H"), "VEVENT 'x': has both DTEND and DURATION"},
		"rdate period":   {doc("SUMMARY:x\nDTSTART:20260102T000000Z\nDURATION:PT1H\nRDATE;VALUE=PERIOD:20260103T000000Z/PT1H"), "VEVENT 'x': RDATE: VALUE=PERIOD is not supported"},
		"too large":      {make([]byte, MaxBytes+1), fmt.Sprintf("calendar is %d bytes, at most %d allowed", MaxBytes+1, MaxBytes)},
		"mixed end kind": {doc("SUMMARY:x\nDTSTART;VALUE=DATE:20260102\nDTEND:20260103T000000Z"), "VEVENT 'x': DTEND and DTSTART must both be dates or both be date-times"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.data, time.UTC)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestTooManyEvents(t *testing.T) {
	events := make([]string, MaxEvents+1)
	for i := range events {
		events[i] = "DTSTART:20260101T000000Z\nDURATION:PT1H"
	}
	_, err := Parse(doc(events...), time.UTC)
	if want := fmt.Sprintf("calendar has %d events, at most %d allowed", MaxEvents+1, MaxEvents); err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// Expansion work is bounded: a rule that needs too many recurrences to reach the stretch, or
// that yields too many periods inside it, is an error.
func TestExpansionLimits(t *testing.T) {
	c, err := Parse(doc("SUMMARY:every minute\nDTSTART:20200101T000000Z\nDURATION:PT30S\nRRULE:FREQ=MINUTELY"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Expand(ts(t, "2026-01-01T00:00:00Z"), ts(t, "2026-01-02T00:00:00Z"))
	want := fmt.Sprintf("VEVENT 'every minute': expanding the calendar until 2026-01-02T00:00:00Z takes more than %d recurrences", MaxSteps)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}

	c, err = Parse(doc("SUMMARY:every minute\nDTSTART:20260101T000000Z\nDURATION:PT30S\nRRULE:FREQ=MINUTELY"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Expand(ts(t, "2026-01-01T00:00:00Z"), ts(t, "2026-02-01T00:00:00Z"))
	want = fmt.Sprintf("calendar has more than %d periods between 2026-01-01T00:00:00Z and 2026-02-01T00:00:00Z", MaxPeriods)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// rrule-go stops 292 years after DTSTART: an unbounded rule started earlier is an error, not a
// calendar that silently ends.
func TestRuleTooOldToFollow(t *testing.T) {
	c, err := Parse(doc("SUMMARY:Christmas\nDTSTART;VALUE=DATE:17001224\nRRULE:FREQ=YEARLY"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Expand(ts(t, "2026-12-01T00:00:00Z"), ts(t, "2027-01-01T00:00:00Z"))
	want := "VEVENT 'Christmas': RRULE cannot be followed from DTSTART 1700-12-24 until 2027-01-01 (at most 292 years): move DTSTART forward"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	// From 1800 it reaches 2026.
	c, err = Parse(doc("SUMMARY:Christmas\nDTSTART;VALUE=DATE:18001224\nRRULE:FREQ=YEARLY"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2026-12-01T00:00:00Z"), ts(t, "2027-01-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got, "2026-12-24T00:00:00Z/2026-12-25T00:00:00Z Christmas")
}
