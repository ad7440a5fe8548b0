package keeper

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper/calendar"
)

// Transition is a change of the state a keeper holds its gate in.
type Transition = schedule.Transition

// Horizon is how far ahead a keeper's next transition is looked for.
const Horizon = schedule.Horizon

// Parse validates and compiles a GateKeeper spec without a calendar (see Compile).
func Parse(spec v1alpha1.GateKeeperSpec) (*Keeper, error) {
	return Compile(spec, nil, time.Time{})
}

// Compile validates (Validate) and compiles a GateKeeper spec with its calendar document (nil
// when spec.calendar is unset), expanded from now over the Horizon (and the runway after it).
// The calendar's problems are joined to the spec's.
func Compile(spec v1alpha1.GateKeeperSpec, cal *calendar.Calendar, now time.Time) (*Keeper, error) {
	c, err := check(spec)
	var known time.Time
	var calErr error
	if spec.Calendar != nil {
		known, calErr = c.addCalendar(cal, now)
	}
	if err := errors.Join(err, calErr); err != nil {
		return nil, err
	}
	if spec.Calendar == nil && len(spec.Periods) == 0 && c.runway == 0 {
		return &Keeper{cron: c.cron, loc: c.loc, plain: true}, nil
	}
	return c.compile(known)
}

// addCalendar adds the events of cal, from now until the Horizon and the runway after it, to
// the periods of the calendar's state, and returns until when they are known.
func (c *checked) addCalendar(cal *calendar.Calendar, now time.Time) (time.Time, error) {
	switch {
	case cal == nil:
		return time.Time{}, errors.New("spec.calendar: the calendar was not read")
	case c.calendar == schedule.None:
		return time.Time{}, nil // its state is reported by check
	}
	known := now.Add(Horizon)
	periods, err := cal.Expand(now, known.Add(c.runway))
	if err != nil {
		return time.Time{}, fmt.Errorf("spec.calendar: %s", err)
	}
	for _, p := range periods {
		sp := span{start: p.Start, end: p.End, label: p.Summary, state: c.calendar}
		if c.calendar == schedule.Closed {
			c.closed = append(c.closed, sp)
		} else {
			c.opened = append(c.opened, sp)
		}
		if p.Summary != "" {
			c.labels = append(c.labels, sp)
		}
	}
	return known, nil
}

// compile builds the Keeper of a valid spec whose calendar's events are known until known.
func (c *checked) compile(known time.Time) (*Keeper, error) {
	k := &Keeper{cron: c.cron, loc: c.loc, runway: c.runway, known: known, labels: c.labels}
	hasClosed := len(c.closed) > 0 || c.calendar == schedule.Closed
	hasOpened := len(c.opened) > 0 || c.calendar == schedule.Opened
	// The cron part, split by state, so each member is one state's set.
	closedSpec, openedSpec := splitByState(c.spec)
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
	if m := merge(c.closed); len(m) > 0 {
		k.closed = append(k.closed, m)
	}
	if m := merge(c.opened); len(m) > 0 {
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
