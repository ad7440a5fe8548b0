package schedule

import "time"

// The timeline is cut into periods of constant UTC offset (time.Time.ZoneBounds). Inside one
// period the local clock is the instant plus the offset, so a wall minute w starts at the
// instant w*60-offset. Searches walk period by period; a DST zone has two periods a year.

// period is a stretch of the timeline with one UTC offset; a zero start or end is unbounded.
type period struct {
	off        int64 // seconds east of UTC
	start, end time.Time
}

func periodAt(t time.Time, loc *time.Location) period {
	lt := t.In(loc)
	_, off := lt.Zone()
	start, end := lt.ZoneBounds()
	return period{off: int64(off), start: start, end: end}
}

// endBefore returns the end of p, or limit when p lasts beyond it; last reports the latter.
func (p period) endBefore(limit time.Time) (end time.Time, last bool) {
	if p.end.IsZero() || !p.end.Before(limit) {
		return limit, true
	}
	return p.end, false
}

// wallMinute is the local minute containing t.
func wallMinute(t time.Time, off int64) int64 {
	return floorDiv(t.Unix()+off, 60)
}

// firstMinuteFrom is the first wall minute starting at or after t.
func firstMinuteFrom(t time.Time, off int64) int64 {
	sec := t.Unix()
	if t.Nanosecond() != 0 {
		sec++
	}
	return ceilDiv(sec+off, 60)
}

// lastMinuteUntil is the last wall minute starting at or before t.
func lastMinuteUntil(t time.Time, off int64) int64 {
	return floorDiv(t.Unix()+off, 60)
}

// minuteStart is the instant wall minute w starts at, under offset off.
func minuteStart(w, off int64) time.Time {
	return time.Unix(w*60-off, 0).UTC()
}

// bareSet is the set of instants during which a matcher (the bare expressions of one state)
// matches in a time zone.
type bareSet struct {
	m   *matcher
	loc *time.Location
}

func (b *bareSet) contains(t time.Time) bool {
	sc := scanner{m: b.m}
	_, off := t.In(b.loc).Zone()
	return sc.match(wallMinute(t, int64(off)))
}

// next implements member: whether t is in the set, and the first instant after t where that
// changes (before limit).
func (b *bareSet) next(t, limit time.Time) (bool, time.Time, bool) {
	sc := scanner{m: b.m}
	p := periodAt(t, b.loc)
	in := sc.match(wallMinute(t, p.off))
	cur := t
	for {
		segEnd, last := p.endBefore(limit)
		// Minute boundaries strictly between cur and segEnd.
		lo := firstMinuteFrom(cur.Add(time.Nanosecond), p.off)
		hi := lastMinuteUntil(segEnd.Add(-time.Nanosecond), p.off)
		if w, ok := sc.findFwd(lo, hi, !in); ok {
			return in, minuteStart(w, p.off), true
		}
		if last {
			return in, limit, false
		}
		// At a change of offset the clock jumps: the minute it lands in may differ.
		cur = segEnd
		p = periodAt(cur, b.loc)
		if sc.match(wallMinute(cur, p.off)) != in {
			return in, cur, true
		}
	}
}
