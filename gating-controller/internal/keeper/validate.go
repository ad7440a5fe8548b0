package keeper

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// checked is a GateKeeper spec as Validate reads it: what Compile builds a Keeper from.
type checked struct {
	// spec holds the cron expressions and the windows; cron is all of them, compiled.
	spec schedule.Spec
	cron *schedule.Keeper
	loc  *time.Location
	// runway is spec.runway (zero without one).
	runway time.Duration
	// closed and opened are the periods of each state; labels those of them with a name.
	closed, opened, labels []span
	// calendar is the state spec.calendar's events keep the gate in (None without a calendar).
	calendar State
}

// Validate checks a GateKeeper spec without reading its calendar: every problem is reported as
// "<field>: <what is wrong>", naming the bad value, and several problems are joined into one
// error.
func Validate(spec v1alpha1.GateKeeperSpec) error {
	_, err := check(spec)
	return err
}

// check reads and validates spec: the type, the cron expressions and windows (compiled by
// shared/schedule), the runway, the periods and the calendar's state.
func check(spec v1alpha1.GateKeeperSpec) (checked, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch spec.Type {
	case "", v1alpha1.CronExpression:
	default:
		fail("spec.type: unsupported type '%s' (only %s)", spec.Type, v1alpha1.CronExpression)
	}
	c := checked{spec: schedule.Spec{TimeZone: spec.TimeZone, TimeZoneField: "spec.timeZone"}, loc: time.UTC}
	if cj := spec.CronJob; cj != nil {
		c.spec.Expressions = []schedule.Expressions{
			{Field: "spec.cronjob.closed", State: schedule.Closed, Exprs: cj.Closed},
			{Field: "spec.cronjob.opened", State: schedule.Opened, Exprs: cj.Opened},
		}
	}
	if len(spec.Windows) > schedule.MaxItems {
		fail("spec.windows: %d windows, at most %d allowed", len(spec.Windows), schedule.MaxItems)
	} else {
		for i, w := range spec.Windows {
			field := fmt.Sprintf("spec.windows[%d]", i)
			state, ok := stateOf(w.State, false)
			if !ok {
				fail("%s.state: must be opened or closed, got '%s'", field, w.State)
				state = schedule.Closed // keep checking the rest
			}
			c.spec.Windows = append(c.spec.Windows, schedule.Window{Field: field, CronField: field + ".schedule", DurationField: field + ".duration",
				State: state, Cron: w.Schedule, Duration: w.Duration.Duration})
		}
	}
	cron, err := schedule.Compile(c.spec)
	if err != nil {
		errs = append(errs, err)
	} else {
		c.cron, c.loc = cron, cron.Location()
	}
	if spec.Runway != nil {
		if c.runway = spec.Runway.Duration; c.runway < 0 {
			fail("spec.runway: must not be negative, got '%s'", c.runway)
		}
	}
	if len(spec.Periods) > schedule.MaxItems {
		fail("spec.periods: %d periods, at most %d allowed", len(spec.Periods), schedule.MaxItems)
	} else {
		for i, p := range spec.Periods {
			if err := c.addPeriod(fmt.Sprintf("spec.periods[%d]", i), p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if cal := spec.Calendar; cal != nil {
		state, ok := stateOf(cal.State, true)
		if !ok {
			fail("spec.calendar.state: must be opened or closed, got '%s'", cal.State)
		}
		c.calendar = state
	}
	return c, errors.Join(errs...)
}

// addPeriod adds the period p, at field, to the periods of its state.
func (c *checked) addPeriod(field string, p v1alpha1.Period) error {
	start, err1 := parseInstant(field+".start", p.Start, c.loc)
	end, err2 := parseInstant(field+".end", p.End, c.loc)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if !end.After(start) {
		return fmt.Errorf("%s.end: '%s' is not after start '%s'", field, p.End, p.Start)
	}
	state, ok := stateOf(p.State, true)
	if !ok {
		return fmt.Errorf("%s.state: must be opened or closed, got '%s'", field, p.State)
	}
	sp := span{start: start, end: end, label: p.Name, state: state}
	if state == schedule.Closed {
		c.closed = append(c.closed, sp)
	} else {
		c.opened = append(c.opened, sp)
	}
	if p.Name != "" {
		c.labels = append(c.labels, sp)
	}
	return nil
}

// stateOf is the schedule state of a gate state; unset is closed where closed is the default.
func stateOf(s v1alpha1.GateState, closedByDefault bool) (State, bool) {
	switch {
	case s == v1alpha1.GateClosed, s == "" && closedByDefault:
		return schedule.Closed, true
	case s == v1alpha1.GateOpened:
		return schedule.Opened, true
	}
	return schedule.None, false
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
