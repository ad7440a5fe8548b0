package keeper

import (
	"sort"
	"time"

	"github.com/sluice-gitops/sluice/shared/schedule"
)

// Keeper is a compiled GateKeeper spec: its cron expressions and windows (shared/schedule, the
// semantics every Sluice schedule shares: DST, windows, bounded work), its calendar's events
// and its periods, and its runway. A keeper of cron expressions and windows only is exactly
// shared/schedule's Keeper. It is immutable and safe for concurrent use.
//
// The calendar and the periods are lists of spans, known from the instant the keeper was
// compiled at until Known: NextTransition looks no further, so a keeper compiled at now answers
// for now and the Horizon after it.
type Keeper struct {
	cron *schedule.Keeper // the whole cron part; the keeper itself when plain
	loc  *time.Location
	// plain: no calendar, no periods, no runway: every question goes to cron.
	plain bool

	closed, opened []member
	outside        State
	runway         time.Duration
	known          time.Time // zero: unbounded
	labels         []span    // the named spans, for Label
}

// State is what schedules hold at an instant: closed, opened or none.
type State = schedule.State

// member is a set of instants.
type member interface {
	// next reports whether t is in the set and the first instant after t at which that
	// changes, with found false when it does not change before limit.
	next(t, limit time.Time) (in bool, until time.Time, found bool)
}

// cronMember is a shared keeper compiled from the schedules of one state only: its At is that
// state or none.
type cronMember struct{ k *schedule.Keeper }

func (c cronMember) next(t, limit time.Time) (bool, time.Time, bool) {
	in := c.k.At(t) != schedule.None
	at, ok := c.k.NextTransition(t)
	if !ok || !at.Before(limit) {
		return in, limit, false
	}
	return in, at, true
}

// span is [start, end) with a label, and the state it holds (for a labelled span).
type span struct {
	start, end time.Time
	label      string
	state      State
}

// spans is a sorted list of disjoint spans that neither overlap nor touch.
type spans []span

// merge sorts and merges spans.
func merge(in []span) spans {
	sort.SliceStable(in, func(i, j int) bool { return in[i].start.Before(in[j].start) })
	var out spans
	for _, s := range in {
		if !s.end.After(s.start) {
			continue
		}
		if n := len(out); n > 0 && !s.start.After(out[n-1].end) {
			if s.end.After(out[n-1].end) {
				out[n-1].end = s.end.UTC()
			}
			continue
		}
		out = append(out, span{start: s.start.UTC(), end: s.end.UTC()})
	}
	return out
}

func (ss spans) next(t, limit time.Time) (bool, time.Time, bool) {
	// The first span ending after t.
	i := sort.Search(len(ss), func(i int) bool { return ss[i].end.After(t) })
	if i == len(ss) {
		return false, limit, false
	}
	s := ss[i]
	if !s.start.After(t) {
		return true, s.end, s.end.Before(limit)
	}
	return false, s.start, s.start.Before(limit)
}

// maxUnionSteps bounds the hand-overs followed in one active stretch of several members.
const maxUnionSteps = 20_000

// union reports whether t is in the union of ms and the first instant after t, before limit,
// at which that changes.
func union(ms []member, t, limit time.Time) (bool, time.Time, bool) {
	in, first, found := false, limit, false
	for _, m := range ms {
		mIn, until, ok := m.next(t, limit)
		switch {
		case mIn:
			in = true
		case ok && until.Before(first):
			first, found = until, true
		}
	}
	if !in {
		return false, first, found
	}
	cur := t
	for range maxUnionSteps {
		anyIn, end := false, cur
		for _, m := range ms {
			mIn, until, ok := m.next(cur, limit)
			if !mIn {
				continue
			}
			if !ok {
				return true, limit, false
			}
			anyIn = true
			if until.After(end) {
				end = until
			}
		}
		if !anyIn {
			return true, cur, true
		}
		cur = end
	}
	return true, limit, false
}

// Location is the keeper's time zone.
func (k *Keeper) Location() *time.Location { return k.loc }

// Known is the end of the stretch the keeper's calendar was expanded over; zero when the
// keeper has no calendar.
func (k *Keeper) Known() time.Time { return k.known }

func (k *Keeper) limit(t time.Time) time.Time {
	l := t.Add(Horizon)
	if !k.known.IsZero() && k.known.Before(l) {
		l = k.known
	}
	return l
}

// baseAt is the state of the schedules without the runway.
func (k *Keeper) baseAt(t time.Time) State {
	lim := t.Add(time.Nanosecond)
	for _, m := range k.closed {
		if in, _, _ := m.next(t, lim); in {
			return schedule.Closed
		}
	}
	for _, m := range k.opened {
		if in, _, _ := m.next(t, lim); in {
			return schedule.Opened
		}
	}
	return schedule.None
}

// closing reports whether the keeper holds its gate closed at t (runway aside) and when that
// changes: the closed schedules' union, or, for a keeper of opened schedules only, the
// complement of the opened ones'.
func (k *Keeper) closing(t, limit time.Time) (bool, time.Time, bool) {
	if k.outside == schedule.Closed {
		in, at, ok := union(k.opened, t, limit)
		return !in, at, ok
	}
	return union(k.closed, t, limit)
}

// closingWithRunway is closing with each closed stretch started Runway early: t is in it when
// the gate is held closed at some instant of [t, t+Runway].
func (k *Keeper) closingWithRunway(t, limit time.Time) (bool, time.Time, bool) {
	r := k.runway
	in, at, ok := k.closing(t, limit.Add(r))
	cur := t
	if !in {
		if !ok {
			return false, limit, false
		}
		if start := at.Add(-r); start.After(t) {
			return false, start, start.Before(limit)
		}
		cur = at // closes within the runway: in from t on
	}
	for range maxUnionSteps {
		_, end, ok := k.closing(cur, limit.Add(r))
		if !ok {
			return true, limit, false
		}
		_, start, ok := k.closing(end, limit.Add(r))
		if !ok || start.Sub(end) > r {
			return true, end, end.Before(limit)
		}
		cur = start // the gap is shorter than the runway: still closed
	}
	return true, limit, false
}

// At returns the state of the keeper's schedules at t: closed, opened, or none when none is
// active. Within Runway before a closed stretch, it is closed.
func (k *Keeper) At(t time.Time) State {
	if k.plain {
		return k.cron.At(t)
	}
	if k.runway > 0 {
		if in, _, _ := k.closingWithRunway(t, t.Add(time.Nanosecond)); in {
			return schedule.Closed
		}
	}
	return k.baseAt(t)
}

// Holds returns the state the keeper holds its gate in at t: At, with none replaced by the
// outside state (opened for a keeper of closed schedules only, closed for one of opened
// schedules only).
func (k *Keeper) Holds(t time.Time) State {
	if s := k.At(t); s != schedule.None {
		return s
	}
	if k.plain {
		return k.cron.Holds(t)
	}
	return k.outside
}

// NextTransition returns the first instant strictly after t at which At changes, and false
// when there is none before t+Horizon (or before Known, for a keeper with a calendar).
func (k *Keeper) NextTransition(t time.Time) (time.Time, bool) {
	if k.plain {
		return k.cron.NextTransition(t)
	}
	limit := k.limit(t)
	if !t.Before(limit) {
		return time.Time{}, false
	}
	cIn, cAt, cOK := k.closingWithRunway(t, limit)
	if cIn {
		return cAt, cOK
	}
	if cOK {
		limit = cAt
	}
	// Not closed until cAt: At is the schedules' state, which may still change from opened to
	// none and back before then.
	if next, ok := k.baseNext(t, limit); ok {
		return next, true
	}
	return cAt, cOK
}

// baseNext is the next change of the schedules' state without the runway.
func (k *Keeper) baseNext(t, limit time.Time) (time.Time, bool) {
	cIn, cAt, cOK := union(k.closed, t, limit)
	if cIn {
		return cAt, cOK
	}
	if cOK {
		limit = cAt
	}
	if _, oAt, oOK := union(k.opened, t, limit); oOK {
		return oAt, true
	}
	return cAt, cOK
}

// Transitions lists the changes of Holds strictly after from and before until, in order, at
// most limit of them; complete is false when the limit cut the list short.
func (k *Keeper) Transitions(from, until time.Time, limit int) (ts []Transition, complete bool) {
	if k.plain {
		return k.cron.Transitions(from, until, limit)
	}
	return schedule.TransitionsOf(k, from, until, limit)
}

// Label is the name of the calendar event or period the keeper is in at t, or that starts
// within Runway after t; empty when there is none.
func (k *Keeper) Label(t time.Time) string {
	for _, s := range k.labels {
		if !t.Before(s.start.Add(-k.runway)) && t.Before(s.end) {
			return s.label
		}
	}
	return ""
}

// Event is the name of the calendar event or period that holds the gate in the state the keeper
// holds it in at t (Holds), a closed one from Runway before its start; empty when none does (a
// cron expression or window does, or an event without a SUMMARY, or nothing between the events).
// Unlike Label, it never names an event whose state is not the keeper's at t.
func (k *Keeper) Event(t time.Time) string {
	holds := k.Holds(t)
	for _, s := range k.labels {
		start := s.start
		if s.state == schedule.Closed {
			start = start.Add(-k.runway)
		}
		if s.state == holds && !t.Before(start) && t.Before(s.end) {
			return s.label
		}
	}
	return ""
}
