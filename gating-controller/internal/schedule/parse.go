package schedule

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/calendar"
)

// Transition is a change of the state a keeper holds its gate in.
type Transition = schedule.Transition

// Horizon is how far ahead a keeper's next transition is looked for.
const Horizon = schedule.Horizon

// Parse validates and compiles a GateKeeper spec without a calendar (see Compile). Each problem
// is reported as "<field>: <what is wrong>", naming the bad value; several problems are joined
// into one error.
func Parse(spec v1alpha1.GateKeeperSpec) (*Keeper, error) {
	return Compile(spec, nil, time.Time{})
}

// Compile validates and compiles a GateKeeper spec with its calendar document (nil when
// spec.calendar is unset), expanded from now over the Horizon (and the runway after it). Each
// problem is reported as "<field>: <what is wrong>", naming the bad value; several problems
// are joined into one error.
func Compile(spec v1alpha1.GateKeeperSpec, cal *calendar.Calendar, now time.Time) (*Keeper, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch spec.Type {
	case "", v1alpha1.CronExpression:
	default:
		fail("spec.type: unsupported type '%s' (only %s)", spec.Type, v1alpha1.CronExpression)
	}
	s := schedule.Spec{TimeZone: spec.TimeZone, TimeZoneField: "spec.timeZone"}
	if cj := spec.CronJob; cj != nil {
		s.Expressions = []schedule.Expressions{
			{Field: "spec.cronjob.closed", State: schedule.Closed, Exprs: cj.Closed},
			{Field: "spec.cronjob.opened", State: schedule.Opened, Exprs: cj.Opened},
		}
	}
	if len(spec.Windows) > schedule.MaxItems {
		fail("spec.windows: %d windows, at most %d allowed", len(spec.Windows), schedule.MaxItems)
	} else {
		for i, w := range spec.Windows {
			field := fmt.Sprintf("spec.windows[%d]", i)
			var state schedule.State
			switch w.State {
			case v1alpha1.GateClosed:
				state = schedule.Closed
			case v1alpha1.GateOpened:
				state = schedule.Opened
			default:
				fail("%s.state: must be opened or closed, got '%s'", field, w.State)
				state = schedule.Closed // keep checking the rest
			}
			s.Windows = append(s.Windows, schedule.Window{Field: field, CronField: field + ".schedule", DurationField: field + ".duration",
				State: state, Cron: w.Schedule, Duration: w.Duration.Duration})
		}
	}
	cron, err := schedule.Compile(s)
	if err != nil {
		errs = append(errs, err)
	}
	var runway time.Duration
	if spec.Runway != nil {
		if runway = spec.Runway.Duration; runway < 0 {
			fail("spec.runway: must not be negative, got '%s'", runway)
		}
	}
	loc := time.UTC
	if cron != nil {
		loc = cron.Location()
	}
	var closed, opened []span
	var labels []span
	hasClosed, hasOpened := false, false
	if len(spec.Periods) > schedule.MaxItems {
		fail("spec.periods: %d periods, at most %d allowed", len(spec.Periods), schedule.MaxItems)
	} else {
		for i, p := range spec.Periods {
			field := fmt.Sprintf("spec.periods[%d]", i)
			start, err1 := parseInstant(field+".start", p.Start, loc)
			end, err2 := parseInstant(field+".end", p.End, loc)
			if err := errors.Join(err1, err2); err != nil {
				errs = append(errs, err)
				continue
			}
			if !end.After(start) {
				fail("%s.end: '%s' is not after start '%s'", field, p.End, p.Start)
				continue
			}
			sp := span{start: start, end: end, label: p.Name}
			switch p.State {
			case "", v1alpha1.GateClosed:
				sp.state = schedule.Closed
				closed, hasClosed = append(closed, sp), true
			case v1alpha1.GateOpened:
				sp.state = schedule.Opened
				opened, hasOpened = append(opened, sp), true
			default:
				fail("%s.state: must be opened or closed, got '%s'", field, p.State)
				continue
			}
			if p.Name != "" {
				labels = append(labels, sp)
			}
		}
	}
	var known time.Time
	if c := spec.Calendar; c != nil {
		var into *[]span
		var state State
		switch c.State {
		case "", v1alpha1.GateClosed:
			into, state, hasClosed = &closed, schedule.Closed, true
		case v1alpha1.GateOpened:
			into, state, hasOpened = &opened, schedule.Opened, true
		default:
			fail("spec.calendar.state: must be opened or closed, got '%s'", c.State)
		}
		switch {
		case cal == nil:
			fail("spec.calendar: the calendar was not read")
		case into != nil:
			known = now.Add(Horizon)
			periods, err := cal.Expand(now, known.Add(runway))
			if err != nil {
				fail("spec.calendar: %s", err)
				break
			}
			for _, p := range periods {
				sp := span{start: p.Start, end: p.End, label: p.Summary, state: state}
				*into = append(*into, sp)
				if p.Summary != "" {
					labels = append(labels, sp)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if spec.Calendar == nil && len(spec.Periods) == 0 && runway == 0 {
		return &Keeper{cron: cron, loc: loc, plain: true}, nil
	}

	k := &Keeper{cron: cron, loc: loc, runway: runway, known: known, labels: labels}
	// The cron part, split by state, so each member is one state's set.
	closedSpec, openedSpec := splitByState(s)
	if len(closedSpec.Expressions) > 0 || len(closedSpec.Windows) > 0 {
		ck, err := schedule.Compile(closedSpec)
		if err != nil {
			return nil, err
		}
		k.closed, hasClosed = append(k.closed, cronMember{ck}), true
	}
	if len(openedSpec.Expressions) > 0 || len(openedSpec.Windows) > 0 {
		ok, err := schedule.Compile(openedSpec)
		if err != nil {
			return nil, err
		}
		k.opened, hasOpened = append(k.opened, cronMember{ok}), true
	}
	if m := merge(closed); len(m) > 0 {
		k.closed = append(k.closed, m)
	}
	if m := merge(opened); len(m) > 0 {
		k.opened = append(k.opened, m)
	}
	sort.SliceStable(k.labels, func(i, j int) bool { return k.labels[i].start.Before(k.labels[j].start) })
	// Schedules of one state only describe when that state holds (as in shared/schedule): a
	// calendar of closed events keeps the gate opened between them.
	switch {
	case hasClosed && !hasOpened:
		k.outside = schedule.Opened
	case hasOpened && !hasClosed:
		k.outside = schedule.Closed
	default:
		k.outside = schedule.None
	}
	return k, nil
}

// splitByState splits a spec into its closed and its opened schedules.
func splitByState(s schedule.Spec) (closed, opened schedule.Spec) {
	closed = schedule.Spec{TimeZone: s.TimeZone, TimeZoneField: s.TimeZoneField}
	opened = closed
	for _, e := range s.Expressions {
		if len(e.Exprs) == 0 {
			continue
		}
		if e.State == schedule.Closed {
			closed.Expressions = append(closed.Expressions, e)
		} else {
			opened.Expressions = append(opened.Expressions, e)
		}
	}
	for _, w := range s.Windows {
		if w.State == schedule.Closed {
			closed.Windows = append(closed.Windows, w)
		} else {
			opened.Windows = append(opened.Windows, w)
		}
	}
	return closed, opened
}

// parseInstant reads an RFC 3339 time, or a date (00:00 of that day in loc).
func parseInstant(field, value string, loc *time.Location) (time.Time, error) {
	v := strings.TrimSpace(value)
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, loc); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s: invalid time '%s': want RFC 3339 (2026-12-24T18:00:00+01:00) or a date (2026-12-24)", field, value)
}
