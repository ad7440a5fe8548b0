package calendar

import (
	"bytes"
	"strings"
	"testing"
	"time"

	ical "github.com/emersion/go-ical"
)

// withZone is a document with one VTIMEZONE (its lines) before the events.
func withZone(zone string, events ...string) []byte {
	var b strings.Builder
	b.WriteString("BEGIN:VTIMEZONE\r\n")
	for _, l := range strings.Split(strings.TrimSpace(zone), "\n") {
		b.WriteString(strings.TrimSpace(l) + "\r\n")
	}
	b.WriteString("END:VTIMEZONE\r\n")
	d := string(doc(events...))
	return []byte(strings.Replace(d, "BEGIN:VEVENT", b.String()+"BEGIN:VEVENT", 1))
}

// Outlook's definition of Central European time: Windows name, rules from 1601.
const westEurope = `
	TZID:W. Europe Standard Time
	BEGIN:STANDARD
	DTSTART:16011028T030000
	RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10
	TZOFFSETFROM:+0200
	TZOFFSETTO:+0100
	END:STANDARD
	BEGIN:DAYLIGHT
	DTSTART:16010325T020000
	RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3
	TZOFFSETFROM:+0100
	TZOFFSETTO:+0200
	END:DAYLIGHT`

// An Outlook calendar names its zone by its Windows name and defines it in a VTIMEZONE: a
// weekly freeze at 09:00 local time follows the zone across the change to summer time on
// 28 March 2027 (08:00Z, then 07:00Z), as Europe/Berlin does.
func TestVTimezoneOfOutlook(t *testing.T) {
	event := `
		SUMMARY:Monday freeze
		DTSTART;TZID=W. Europe Standard Time:20270322T090000
		DTEND;TZID=W. Europe Standard Time:20270322T110000
		RRULE:FREQ=WEEKLY;COUNT=3`
	c, err := Parse(withZone(westEurope, event), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2027-03-01T00:00:00Z"), ts(t, "2027-05-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2027-03-22T08:00:00Z/2027-03-22T10:00:00Z Monday freeze",
		"2027-03-29T07:00:00Z/2027-03-29T09:00:00Z Monday freeze",
		"2027-04-05T07:00:00Z/2027-04-05T09:00:00Z Monday freeze",
	}
	expect(t, got, want...)

	berlin, err := Parse(doc(strings.ReplaceAll(event, "W. Europe Standard Time", "Europe/Berlin")), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	gotBerlin, err := berlin.Expand(ts(t, "2027-03-01T00:00:00Z"), ts(t, "2027-05-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, gotBerlin, want...)
}

// The zone's offsets in October, before and after the change back on 31 October 2027, and far
// from the rules' 1601 start.
func TestVTimezoneOffsets(t *testing.T) {
	c, err := Parse(withZone(westEurope, "SUMMARY:x\nDTSTART:20270101T000000Z\nDURATION:PT1H"), time.UTC)
	if err != nil || c.Events() != 1 {
		t.Fatal(err)
	}
	loc, err := newTimezonesOf(t, withZone(westEurope, "SUMMARY:x\nDTSTART:20270101T000000Z")).load("W. Europe Standard Time")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		utc  string
		want string
	}{
		{"2027-10-31T00:59:59Z", "02:59:59 +0200"},
		{"2027-10-31T01:00:00Z", "02:00:00 +0100"},
		{"2027-07-01T12:00:00Z", "14:00:00 +0200"},
		{"2090-01-01T12:00:00Z", "13:00:00 +0100"},
		{"1990-07-01T12:00:00Z", "14:00:00 +0200"},
	} {
		if got := ts(t, tc.utc).In(loc).Format("15:04:05 -0700"); got != tc.want {
			t.Errorf("%s in the zone: %s, want %s", tc.utc, got, tc.want)
		}
	}
}

func newTimezonesOf(t *testing.T, data []byte) *timezones {
	t.Helper()
	d, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		t.Fatal(err)
	}
	return newTimezones(d)
}

// Google and Thunderbird name the IANA zone in X-LIC-LOCATION: it is used, whatever the TZID.
func TestVTimezoneLicLocation(t *testing.T) {
	c, err := Parse(withZone("TZID:Eastern\nX-LIC-LOCATION:America/New_York\nBEGIN:STANDARD\nDTSTART:19701101T020000\nTZOFFSETFROM:-0400\nTZOFFSETTO:-0500\nEND:STANDARD",
		"SUMMARY:Thanksgiving\nDTSTART;TZID=Eastern:20271125T000000\nDURATION:PT24H"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Expand(ts(t, "2027-11-01T00:00:00Z"), ts(t, "2027-12-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, got, "2027-11-25T05:00:00Z/2027-11-26T05:00:00Z Thanksgiving")
}

func TestVTimezoneErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		zone, want string
	}{
		"bad offset": {"TZID:Z\nBEGIN:STANDARD\nDTSTART:19700101T000000\nTZOFFSETFROM:+0100\nTZOFFSETTO:+2500\nEND:STANDARD",
			"VEVENT 'x': DTSTART: VTIMEZONE 'Z': STANDARD: TZOFFSETTO: invalid offset '+2500'"},
		"no observance": {"TZID:Z", "VEVENT 'x': DTSTART: VTIMEZONE 'Z': no STANDARD or DAYLIGHT observance"},
		"bad rule": {"TZID:Z\nBEGIN:DAYLIGHT\nDTSTART:19700101T000000\nRRULE:FREQ=SOMETIMES\nTZOFFSETFROM:+0100\nTZOFFSETTO:+0200\nEND:DAYLIGHT",
			"VEVENT 'x': DTSTART: VTIMEZONE 'Z': DAYLIGHT: RRULE 'FREQ=SOMETIMES': "},
		"too many onsets": {"TZID:Z\nBEGIN:DAYLIGHT\nDTSTART:19700101T000000\nRRULE:FREQ=DAILY\nTZOFFSETFROM:+0100\nTZOFFSETTO:+0200\nEND:DAYLIGHT",
			"VEVENT 'x': DTSTART: VTIMEZONE 'Z': DAYLIGHT: RRULE 'FREQ=DAILY': more than 2000 onsets before 2100"},
		"other tzid": {"TZID:Y\nBEGIN:STANDARD\nDTSTART:19700101T000000\nTZOFFSETFROM:+0100\nTZOFFSETTO:+0100\nEND:STANDARD",
			"VEVENT 'x': DTSTART: unknown time zone 'Z': use an IANA name such as Europe/Berlin, or define it in a VTIMEZONE"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(withZone(tc.zone, "SUMMARY:x\nDTSTART;TZID=Z:20270101T000000\nDURATION:PT1H"), time.UTC)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}
