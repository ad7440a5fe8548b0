// Package calendar reads the periods of an iCalendar (RFC 5545) document for a GateKeeper: each
// VEVENT, with its recurrences (RRULE, RDATE, EXDATE, overridden instances), is a list of
// periods [start, end) over a bounded stretch of time.
//
// Parsing is github.com/emersion/go-ical's; recurrence rules are expanded by
// github.com/teambition/rrule-go. What is read:
//   - DTSTART with a UTC time (Z), a TZID parameter (an IANA name such as Europe/Berlin, or a
//     zone the document defines in a VTIMEZONE, as Outlook's Windows names are), a
//     floating local time (read in the keeper's time zone), or a date (VALUE=DATE: an all-day
//     event, from 00:00 of that day in the keeper's time zone);
//   - DTEND or DURATION; without either, a date-time event lasts no time (and is left out) and
//     an all-day event one day. All-day events last whole local days, whatever DST does;
//     date-time events last their exact duration;
//   - RRULE, RDATE (dates or date-times) and EXDATE, with several comma-separated values;
//   - instances overridden by a VEVENT with the same UID and a RECURRENCE-ID replace the
//     instance they name; STATUS:CANCELLED events and instances are left out;
//   - SUMMARY, kept as the label of each period.
//
// Work is bounded: a document is at most MaxBytes, holds at most MaxEvents VEVENTs, an
// expansion follows at most MaxSteps recurrences from the events' DTSTARTs and returns at most
// MaxPeriods periods. Exceeding a limit is an error, never a silently shorter calendar.
package calendar

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	// Embedded zone data, so TZID names resolve in images without /usr/share/zoneinfo.
	_ "time/tzdata"

	ical "github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

const (
	// MaxBytes is the largest document read (a ConfigMap holds at most 1 MiB too).
	MaxBytes = 1 << 20
	// MaxEvents is the largest number of VEVENTs in a document.
	MaxEvents = 1000
	// MaxSteps bounds the recurrences an expansion follows, from each event's DTSTART to the
	// end of the expanded stretch, over all events: a daily rule started in 1970 takes about
	// 23,000 steps to reach 2030.
	MaxSteps = 200_000
	// MaxPeriods bounds the periods an expansion returns.
	MaxPeriods = 10_000
)

// Period is one occurrence of an event: [Start, End).
type Period struct {
	Start, End time.Time
	// Summary is the event's SUMMARY, empty when it has none.
	Summary string
}

// Calendar is a parsed document. It is immutable and safe for concurrent use.
type Calendar struct {
	events []*event
}

// Events is the number of events read (overridden instances included).
func (c *Calendar) Events() int { return len(c.events) }

type event struct {
	name    string // how errors name it: its SUMMARY or UID
	summary string
	start   time.Time
	allDay  bool
	days    int           // all-day: whole days
	dur     time.Duration // date-time: exact duration; all-day: beyond the whole days
	rule    *rrule.ROption
	rdates  []time.Time
	exdates []time.Time
}

// Parse reads a document; loc is the time zone of dates and floating times (the keeper's).
// Errors name the event ("VEVENT 'Christmas': DTSTART: ...").
func Parse(data []byte, loc *time.Location) (*Calendar, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("calendar is %d bytes, at most %d allowed", len(data), MaxBytes)
	}
	if loc == nil {
		loc = time.UTC
	}
	doc, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		return nil, fmt.Errorf("invalid iCalendar document: %s", strings.TrimPrefix(err.Error(), "ical: "))
	}
	vevents := doc.Events()
	if len(vevents) > MaxEvents {
		return nil, fmt.Errorf("calendar has %d events, at most %d allowed", len(vevents), MaxEvents)
	}
	c := &Calendar{}
	zones := newTimezones(doc)
	byUID := map[string]*event{}
	type override struct {
		uid string
		at  time.Time
		ev  *event
	}
	var overrides []override
	var errs []error
	for i, ve := range vevents {
		ev, recurrenceID, cancelled, err := readEvent(ve, i, loc, zones)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, _ := ve.Props.Text(ical.PropUID)
		if !recurrenceID.IsZero() {
			if cancelled {
				ev = nil
			}
			overrides = append(overrides, override{uid: uid, at: recurrenceID, ev: ev})
			continue
		}
		if cancelled {
			continue
		}
		if uid != "" {
			byUID[uid] = ev
		}
		c.events = append(c.events, ev)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, o := range overrides {
		if master := byUID[o.uid]; master != nil {
			master.exdates = append(master.exdates, o.at)
		}
		if o.ev != nil {
			c.events = append(c.events, o.ev)
		}
	}
	return c, nil
}

func readEvent(ve ical.Event, i int, loc *time.Location, zones *timezones) (ev *event, recurrenceID time.Time, cancelled bool, err error) {
	summary, _ := ve.Props.Text(ical.PropSummary)
	uid, _ := ve.Props.Text(ical.PropUID)
	ev = &event{summary: summary, name: fmt.Sprintf("VEVENT %d", i+1)}
	switch {
	case summary != "":
		ev.name = fmt.Sprintf("VEVENT '%s'", summary)
	case uid != "":
		ev.name = fmt.Sprintf("VEVENT with UID '%s'", uid)
	}
	fail := func(format string, args ...any) (*event, time.Time, bool, error) {
		return nil, time.Time{}, false, fmt.Errorf("%s: %s", ev.name, fmt.Sprintf(format, args...))
	}
	status, _ := ve.Props.Text(ical.PropStatus)
	cancelled = strings.EqualFold(status, string(ical.EventCancelled))

	startProp := ve.Props.Get(ical.PropDateTimeStart)
	if startProp == nil {
		return fail("DTSTART is missing")
	}
	start, allDay, err := instant(startProp, startProp.Value, loc, zones)
	if err != nil {
		return fail("DTSTART: %v", err)
	}
	ev.start, ev.allDay = start, allDay

	if err := ev.readEnd(ve, startProp, loc, zones); err != nil {
		return fail("%s", err)
	}

	if p := ve.Props.Get(ical.PropRecurrenceRule); p != nil {
		opt, err := rrule.StrToROptionInLocation(p.Value, start.Location())
		if err != nil {
			return fail("RRULE '%s': %v", p.Value, err)
		}
		opt.Dtstart = start
		if _, err := rrule.NewRRule(*opt); err != nil {
			return fail("RRULE '%s': %v", p.Value, err)
		}
		ev.rule = opt
	}
	for _, p := range ve.Props.Values(ical.PropRecurrenceDates) {
		if strings.EqualFold(p.Params.Get(ical.ParamValue), "PERIOD") {
			return fail("RDATE: VALUE=PERIOD is not supported, list start dates or date-times")
		}
		for _, v := range strings.Split(p.Value, ",") {
			t, _, err := instant(&p, v, start.Location(), zones)
			if err != nil {
				return fail("RDATE: %v", err)
			}
			ev.rdates = append(ev.rdates, t)
		}
	}
	for _, p := range ve.Props.Values(ical.PropExceptionDates) {
		for _, v := range strings.Split(p.Value, ",") {
			t, _, err := instant(&p, v, start.Location(), zones)
			if err != nil {
				return fail("EXDATE: %v", err)
			}
			ev.exdates = append(ev.exdates, t)
		}
	}
	if p := ve.Props.Get(ical.PropRecurrenceID); p != nil {
		if recurrenceID, _, err = instant(p, p.Value, start.Location(), zones); err != nil {
			return fail("RECURRENCE-ID: %v", err)
		}
	}
	return ev, recurrenceID, cancelled, nil
}

// readEnd reads when the event that starts at ev.start (DTSTART, startProp) ends: its DTEND,
// or its DURATION, or, with neither, its start day for a date and its start for a date-time.
func (ev *event) readEnd(ve ical.Event, startProp *ical.Prop, loc *time.Location, zones *timezones) error {
	endProp, durProp := ve.Props.Get(ical.PropDateTimeEnd), ve.Props.Get(ical.PropDuration)
	switch {
	case endProp != nil && durProp != nil:
		return errors.New("has both DTEND and DURATION")
	case endProp != nil:
		end, endAllDay, err := instant(endProp, endProp.Value, loc, zones)
		if err != nil {
			return fmt.Errorf("DTEND: %v", err)
		}
		if endAllDay != ev.allDay {
			return errors.New("DTEND and DTSTART must both be dates or both be date-times")
		}
		if end.Before(ev.start) {
			return fmt.Errorf("DTEND %s is before DTSTART %s", endProp.Value, startProp.Value)
		}
		if ev.allDay {
			ev.days = daysBetween(ev.start, end)
		} else {
			ev.dur = end.Sub(ev.start)
		}
	case durProp != nil:
		d, err := durProp.Duration()
		if err != nil {
			return fmt.Errorf("DURATION: %s", strings.TrimPrefix(err.Error(), "ical: "))
		}
		if d < 0 {
			return fmt.Errorf("DURATION %s is negative", durProp.Value)
		}
		if ev.allDay {
			// Days are nominal: whole local days, whatever DST does.
			ev.days, ev.dur = int(d/(24*time.Hour)), d%(24*time.Hour)
		} else {
			ev.dur = d
		}
	default:
		if ev.allDay {
			ev.days = 1
		}
	}
	return nil
}

// instant reads one value of a date or date-time property: a date is 00:00 of that day in loc; a
// date-time is UTC (Z), in its TZID (zones), or floating (loc).
func instant(p *ical.Prop, value string, loc *time.Location, zones *timezones) (time.Time, bool, error) {
	value = strings.TrimSpace(value)
	isDate := strings.EqualFold(p.Params.Get(ical.ParamValue), string(ical.ValueDate)) ||
		(p.Params.Get(ical.ParamValue) == "" && len(value) == len("20060102"))
	if isDate {
		t, err := time.ParseInLocation("20060102", value, loc)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("invalid date '%s': want YYYYMMDD", value)
		}
		return t, true, nil
	}
	if strings.HasSuffix(value, "Z") {
		t, err := time.ParseInLocation("20060102T150405Z", value, time.UTC)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("invalid date-time '%s': want YYYYMMDDTHHMMSSZ", value)
		}
		return t, false, nil
	}
	if tzid := p.Params.Get(ical.PropTimezoneID); tzid != "" {
		tz, err := zones.load(tzid)
		if err != nil {
			return time.Time{}, false, err
		}
		loc = tz
	}
	t, err := time.ParseInLocation("20060102T150405", value, loc)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("invalid date-time '%s': want YYYYMMDDTHHMMSS", value)
	}
	return t, false, nil
}

// daysBetween counts the calendar days from a to b, both local midnights.
func daysBetween(a, b time.Time) int {
	ay, am, ad := a.Date()
	by, bm, bd := b.In(a.Location()).Date()
	da := time.Date(ay, am, ad, 12, 0, 0, 0, time.UTC)
	db := time.Date(by, bm, bd, 12, 0, 0, 0, time.UTC)
	return int(db.Sub(da).Hours() / 24)
}

// end is when the occurrence starting at s ends.
func (e *event) end(s time.Time) time.Time {
	if e.allDay {
		y, m, d := s.Date()
		return time.Date(y, m, d+e.days, 0, 0, 0, 0, s.Location()).Add(e.dur)
	}
	return s.Add(e.dur)
}

// Expand returns the periods of the calendar that overlap [from, until), by start then end.
// Periods of no length are left out.
func (c *Calendar) Expand(from, until time.Time) ([]Period, error) {
	var out []Period
	steps := 0
	for _, e := range c.events {
		add := func(s time.Time) error {
			end := e.end(s)
			if !end.After(s) || !end.After(from) || !s.Before(until) {
				return nil
			}
			if len(out) == MaxPeriods {
				return fmt.Errorf("calendar has more than %d periods between %s and %s", MaxPeriods,
					from.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
			}
			out = append(out, Period{Start: s, End: end, Summary: e.summary})
			return nil
		}
		if e.rule == nil && len(e.rdates) == 0 {
			steps++
			if err := add(e.start); err != nil {
				return nil, err
			}
			continue
		}
		set := &rrule.Set{}
		set.DTStart(e.start)
		if e.rule != nil {
			r, err := rrule.NewRRule(*e.rule)
			if err != nil {
				return nil, fmt.Errorf("%s: RRULE: %v", e.name, err)
			}
			set.RRule(r)
		} else {
			set.RDate(e.start) // DTSTART is the first instance of a set of RDATEs
		}
		for _, t := range e.rdates {
			set.RDate(t)
		}
		for _, t := range e.exdates {
			set.ExDate(t)
		}
		next := set.Iterator()
		for {
			s, ok := next()
			if !ok && e.rule != nil && e.rule.Count == 0 && e.rule.Until.IsZero() {
				// An unbounded rule never ends: rrule-go stopped 292 years after DTSTART (the
				// range of a time.Duration). Said, never a silently shorter calendar.
				return nil, fmt.Errorf("%s: RRULE cannot be followed from DTSTART %s until %s (at most 292 years): move DTSTART forward",
					e.name, e.start.Format("2006-01-02"), until.UTC().Format("2006-01-02"))
			}
			if !ok || !s.Before(until) {
				break
			}
			if steps++; steps > MaxSteps {
				return nil, fmt.Errorf("%s: expanding the calendar until %s takes more than %d recurrences",
					e.name, until.UTC().Format(time.RFC3339), MaxSteps)
			}
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].End.Before(out[j].End)
	})
	return out, nil
}
