package schedule

import (
	"time"
)

// Transition is an instant at which the state a keeper holds its gate in changes.
type Transition struct {
	At time.Time
	// Holds is the state from At on (Holds, not At: none is replaced by the outside state).
	Holds State
}

// Timeline is what a keeper's transitions are read from: the state it holds at an instant and
// the next instant that may change it.
type Timeline interface {
	Holds(t time.Time) State
	NextTransition(t time.Time) (time.Time, bool)
}

// Transitions lists the changes of Holds strictly after from and before until, in order, for a
// timeline of the coming days. At most limit are returned, so a schedule that changes every
// minute cannot make a long list; complete is false when the limit cut the list short.
// Changes of At that Holds does not show (opened to none, for a keeper of opened schedules only)
// are left out.
func (k *Keeper) Transitions(from, until time.Time, limit int) (ts []Transition, complete bool) {
	return TransitionsOf(k, from, until, limit)
}

// TransitionsOf is Transitions for any Timeline (a keeper with calendars as well as cron).
func TransitionsOf(k Timeline, from, until time.Time, limit int) (ts []Transition, complete bool) {
	holds := k.Holds(from)
	for t := from; ; {
		next, ok := k.NextTransition(t)
		if !ok || !next.Before(until) {
			return ts, true
		}
		t = next
		if h := k.Holds(next); h != holds {
			if len(ts) == limit {
				return ts, false
			}
			holds = h
			ts = append(ts, Transition{At: next, Holds: h})
		}
	}
}
