package schedule

import (
	"time"
)

// Horizon is how far ahead NextTransition looks: 1830 days, just over
// five years. Every expression that can match at all matches within five years, except 29
// February across a skipped leap year (2100): '0 0 29 2 *' after 2096 reports no transition.
const Horizon = 5 * 366 * 24 * time.Hour

// maxMergeSteps caps the work NextTransition spends following one active stretch made of
// several expressions and windows of the same state that keep taking over from one another.
// Each step is one active stretch of one member; realistic keepers need a handful. A spec that
// needs more (say, a window every other minute bridged by an expression matching the minutes
// in between, for years) gets false, as if no transition were within the horizon; the caller
// then falls back to its periodic re-evaluation.
const maxMergeSteps = 20_000

// member is a set of instants: the bare expressions of one state, or one window.
type member interface {
	contains(t time.Time) bool
	// next reports whether t is in the set and the first instant after t at which that
	// changes, with found false when it does not change before limit.
	next(t, limit time.Time) (in bool, until time.Time, found bool)
}

// Keeper is a compiled Spec. It is immutable and safe for concurrent use.
type Keeper struct {
	loc    *time.Location
	closed []member
	opened []member
	// outside is the state while none of the keeper's schedules is active: the other state
	// for a keeper with schedules of one state only, none otherwise.
	outside State
}

// Location is the keeper's time zone.
func (k *Keeper) Location() *time.Location { return k.loc }

// At returns the state of the keeper's schedules at t: closed, opened, or none when none is active.
func (k *Keeper) At(t time.Time) State {
	return stateAt(k.closed, k.opened, t)
}

// Holds returns the state the keeper holds its gate in at t: At, with none replaced by the
// outside state (opened for a keeper of closed schedules only, closed for one of opened
// schedules only).
func (k *Keeper) Holds(t time.Time) State {
	if s := k.At(t); s != None {
		return s
	}
	return k.outside
}

// NextTransition returns the first instant strictly after t at which At (and so Holds, whose
// outside state only replaces none) changes, and false when there is none before t+Horizon.
func (k *Keeper) NextTransition(t time.Time) (time.Time, bool) {
	return nextTransition(k.closed, k.opened, t)
}

func anyContains(ms []member, t time.Time) bool {
	for _, m := range ms {
		if m.contains(t) {
			return true
		}
	}
	return false
}

func stateAt(closed, opened []member, t time.Time) State {
	switch {
	case anyContains(closed, t):
		return Closed
	case anyContains(opened, t):
		return Opened
	default:
		return None
	}
}

func nextTransition(closed, opened []member, t time.Time) (time.Time, bool) {
	limit := t.Add(Horizon)
	cIn, cAt, cOK := union(closed, t, limit)
	if cIn {
		// Closed until the closed sets all end, whatever the opened ones do.
		return cAt, cOK
	}
	// Opened or none until a closed set starts or the opened sets change.
	if cOK {
		limit = cAt
	}
	if _, oAt, oOK := union(opened, t, limit); oOK {
		return oAt, true
	}
	return cAt, cOK
}

// union reports whether t is in the union of ms and the first instant after t, before limit,
// at which that changes.
func union(ms []member, t, limit time.Time) (bool, time.Time, bool) {
	type track struct {
		m          member
		start, end time.Time // the member's next active stretch; end zero until computed
		done       bool      // no further stretch before limit
	}
	tracks := make([]track, 0, len(ms))
	in := false
	var first time.Time
	found := false
	for _, m := range ms {
		mIn, until, ok := m.next(t, limit)
		switch {
		case mIn && !ok:
			return true, limit, false // this member alone stays in past limit
		case mIn:
			in = true
			tracks = append(tracks, track{m: m, start: t, end: until})
		case ok:
			tracks = append(tracks, track{m: m, start: until})
			if !found || until.Before(first) {
				first, found = until, true
			}
		}
	}
	if !in {
		return false, first, found
	}

	// t is in: follow the stretch while some member's next stretch starts inside it.
	end := t
	steps := 0
	for progressed := true; progressed; {
		progressed = false
		for i := range tracks {
			tr := &tracks[i]
			for !tr.done && !tr.start.After(end) {
				if steps++; steps > maxMergeSteps {
					return true, limit, false
				}
				if tr.end.IsZero() {
					_, until, ok := tr.m.next(tr.start, limit)
					if !ok {
						return true, limit, false
					}
					tr.end = until
				}
				if tr.end.After(end) {
					end, progressed = tr.end, true
				}
				_, s, ok := tr.m.next(tr.end, limit)
				tr.start, tr.end, tr.done = s, time.Time{}, !ok
			}
		}
	}
	return true, end, true
}
