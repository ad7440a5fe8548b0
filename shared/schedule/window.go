package schedule

import "time"

// maxZoneOffset bounds the UTC offset of any time zone (IANA offsets stay within about ±16h,
// historical local mean times included). It bounds how far a window's end can be from
// activation+duration in absolute time, so searches know where to start looking.
const maxZoneOffset = 26 * time.Hour

// windowSet is the set of instants during which a window is active: the union over its
// activations a of [a, end(a)).
//
// Activations are the starts of the local minutes its schedule matches. end(a) is the first
// instant after a at which the local clock reads at least clock(a)+duration. Two facts make the
// union cheap to compute without enumerating activations one by one:
//   - within one period of constant offset, end is non-decreasing in a, so the latest
//     activation of a period ending by some instant has the latest end among them;
//   - within one period, consecutive activations at most mergeGap minutes apart overlap or
//     touch, so a chain of them is one active stretch lasting until the end of its last one.
type windowSet struct {
	m        *matcher
	loc      *time.Location
	d        time.Duration
	mergeGap int64 // whole minutes in d
}

// end returns when the activation at a (offset off) ends.
func (w *windowSet) end(a time.Time, off int64) time.Time {
	// x is the clock reading to reach, written as if it were a UTC instant.
	x := a.Add(time.Duration(off) * time.Second).Add(w.d)
	// Before x-maxZoneOffset no clock reads x yet.
	s := a
	if lb := x.Add(-maxZoneOffset); lb.After(s) {
		s = lb
	}
	for {
		p := periodAt(s, w.loc)
		u := x.Add(-time.Duration(p.off) * time.Second)
		if u.Before(s) {
			// The clock jumped past x when this period began (x is in a spring-forward gap).
			u = s
		}
		if p.end.IsZero() || u.Before(p.end) {
			return u.UTC()
		}
		s = p.end
	}
}

// lastActivation returns the latest activation in [lo, hi] and its period.
func (w *windowSet) lastActivation(sc *scanner, lo, hi time.Time) (time.Time, period, bool) {
	for !hi.Before(lo) {
		p := periodAt(hi, w.loc)
		from := lo
		if p.start.After(from) {
			from = p.start
		}
		if m, ok := sc.findBwd(firstMinuteFrom(from, p.off), lastMinuteUntil(hi, p.off), true); ok {
			return minuteStart(m, p.off), p, true
		}
		if p.start.IsZero() || !p.start.After(lo) {
			break
		}
		hi = p.start.Add(-time.Nanosecond)
	}
	return time.Time{}, period{}, false
}

// firstActivation returns the earliest activation in [lo, limit).
func (w *windowSet) firstActivation(sc *scanner, lo, limit time.Time) (time.Time, bool) {
	for lo.Before(limit) {
		p := periodAt(lo, w.loc)
		segEnd, _ := p.endBefore(limit)
		if m, ok := sc.findFwd(firstMinuteFrom(lo, p.off), lastMinuteUntil(segEnd.Add(-time.Nanosecond), p.off), true); ok {
			return minuteStart(m, p.off), true
		}
		lo = segEnd
	}
	return time.Time{}, false
}

// latestEnd returns the latest end among activations in [lo, hi] that end after t. With
// firstOnly it stops at the first such activation found (enough to answer "is t covered").
// It looks at one activation per period: the latest, whose end is the latest of its period.
func (w *windowSet) latestEnd(sc *scanner, lo, hi, t time.Time, firstOnly bool) (time.Time, bool) {
	var best time.Time
	found := false
	for {
		a, p, ok := w.lastActivation(sc, lo, hi)
		if !ok {
			break
		}
		if e := w.end(a, p.off); e.After(t) && (!found || e.After(best)) {
			best, found = e, true
			if firstOnly {
				break
			}
		}
		if p.start.IsZero() || !p.start.After(lo) {
			break
		}
		hi = p.start.Add(-time.Nanosecond)
	}
	return best, found
}

// lookback is the earliest instant an activation can start at and still cover t: its clock
// reading plus the duration must exceed the clock at t.
func (w *windowSet) lookback(t time.Time) time.Time {
	_, off := t.In(w.loc).Zone()
	return t.Add(time.Duration(off) * time.Second).Add(-w.d).Add(-maxZoneOffset)
}

func (w *windowSet) contains(t time.Time) bool {
	sc := scanner{m: w.m}
	_, ok := w.latestEnd(&sc, w.lookback(t), t, t, true)
	return ok
}

// next implements member.
func (w *windowSet) next(t, limit time.Time) (bool, time.Time, bool) {
	sc := scanner{m: w.m}
	cur, in := w.latestEnd(&sc, w.lookback(t), t, t, false)
	if !in {
		a, ok := w.firstActivation(&sc, t.Add(time.Nanosecond), limit)
		if !ok {
			return false, limit, false
		}
		return false, a, true
	}
	// Activations starting inside the active stretch (up to and including its current end)
	// extend it; repeat until none does. Each round moves past at least one period or chain.
	done := t
	for cur.Before(limit) {
		e, ok := w.extend(&sc, done, cur, limit)
		if !ok || !e.After(cur) {
			return true, cur, true
		}
		done, cur = cur, e
	}
	return true, limit, false
}

// extend returns the latest end among activations in (after, upto], following the chain of
// merging activations that continues past upto in the latest one's period.
func (w *windowSet) extend(sc *scanner, after, upto, limit time.Time) (time.Time, bool) {
	lo := after.Add(time.Nanosecond)
	a, p, ok := w.lastActivation(sc, lo, upto)
	if !ok {
		return time.Time{}, false
	}
	last := w.chain(sc, a, p, limit)
	best := w.end(last, p.off)
	// Earlier periods in the range: a backward clock change can give their latest activation
	// a later end than the activations after it.
	if !p.start.IsZero() && p.start.After(lo) {
		if e, ok := w.latestEnd(sc, lo, p.start.Add(-time.Nanosecond), upto, false); ok && e.After(best) {
			best = e
		}
	}
	return best, true
}

// chain returns the last activation of the chain of merging activations that starts at a,
// within a's period and before limit. It moves a day at a time where the gaps inside a day are
// small enough to merge, and run by run otherwise.
func (w *windowSet) chain(sc *scanner, a time.Time, p period, limit time.Time) time.Time {
	if w.mergeGap == 0 {
		return a // activations a minute apart do not touch
	}
	segEnd, _ := p.endBefore(limit)
	hi := lastMinuteUntil(segEnd.Add(-time.Nanosecond), p.off)
	m := wallMinute(a, p.off)
	e := &w.m.exprs[0]
	if e.anyDay && e.month == allMonths && int64(max(e.maxGap, e.firstMin+minutesPerDay-e.lastMin)) <= w.mergeGap {
		// Every day matches and no gap, even overnight, is too long: nothing breaks the chain.
		if l, ok := sc.findBwd(m, hi, true); ok {
			m = l
		}
		return minuteStart(m, p.off)
	}
	for {
		if int64(e.maxGap) <= w.mergeGap {
			// The whole rest of this day chains: go to its last match.
			dayEnd := floorDiv(m, minutesPerDay)*minutesPerDay + minutesPerDay - 1
			if l, ok := sc.findBwd(m, min(hi, dayEnd), true); ok {
				m = l
			}
		} else if r, ok := sc.findFwd(m+1, hi, false); ok {
			m = r - 1 // a run of consecutive matching minutes merges (mergeGap >= 1)
		} else {
			return minuteStart(hi, p.off)
		}
		// The next match continues the chain if it comes within mergeGap minutes.
		n, ok := sc.findFwd(m+1, min(hi, m+w.mergeGap), true)
		if !ok {
			return minuteStart(m, p.off)
		}
		m = n
	}
}
