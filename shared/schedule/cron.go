package schedule

import (
	"math/bits"
	"time"

	"github.com/robfig/cron/v3"
)

// Bare expressions are evaluated on a zone-less "wall calendar": minutes counted from
// 1970-01-01 00:00 of the local clock, with no DST. The timeline code (timeline.go) maps each
// stretch of constant UTC offset onto that calendar, which is what makes skipped minutes never
// match and repeated minutes match twice.

const (
	minutesPerDay = 24 * 60
	secondsPerDay = minutesPerDay * 60
	// dayWords holds one bit per minute of a day.
	dayWords = (minutesPerDay + 63) / 64

	// starBit is robfig/cron's marker for a field written as '*' or '?'.
	starBit   = uint64(1) << 63
	allMonths = uint64(0x1ffe)     // bits 1..12
	allDoms   = uint64(0xfffffffe) // bits 1..31
	allDows   = uint64(0x7f)       // bits 0..6
)

// dayMask has bit h*60+m set for every matching minute of a day.
type dayMask [dayWords]uint64

// first returns the lowest minute in [from, to] whose bit equals want.
func (d *dayMask) first(from, to int, want bool) (int, bool) {
	for i := from / 64; i <= to/64; i++ {
		if v := d.word(i, from, to, want); v != 0 {
			return i*64 + bits.TrailingZeros64(v), true
		}
	}
	return 0, false
}

// last returns the highest minute in [from, to] whose bit equals want.
func (d *dayMask) last(from, to int, want bool) (int, bool) {
	for i := to / 64; i >= from/64; i-- {
		if v := d.word(i, from, to, want); v != 0 {
			return i*64 + 63 - bits.LeadingZeros64(v), true
		}
	}
	return 0, false
}

// word is word i of the mask (inverted when want is false), cut to the minutes in [from, to].
func (d *dayMask) word(i, from, to int, want bool) uint64 {
	v := d[i]
	if !want {
		v = ^v
	}
	if i == from/64 {
		v &= ^uint64(0) << uint(from%64)
	}
	if i == to/64 && to%64 != 63 {
		v &= (uint64(1) << uint(to%64+1)) - 1
	}
	return v
}

// expr is one compiled cron expression.
type expr struct {
	minutes dayMask // minutes of a matching day
	fullDay bool    // every minute of a matching day matches
	month   uint64  // bits 1..12
	dom     uint64  // bits 1..31
	dow     uint64  // bits 0..6 (Sunday = 0)
	// both: robfig requires day-of-month AND day-of-week to match when either was written with
	// a star, and accepts either one (OR) when both are restricted.
	both   bool
	anyDay bool // every day of a matching month matches
	// Within a matching day: the first and last matching minute and the largest distance
	// between two consecutive ones (0 when only one minute matches).
	firstMin, lastMin, maxGap int
}

func compile(s *cron.SpecSchedule) expr {
	e := expr{
		month: s.Month & allMonths,
		dom:   s.Dom & allDoms,
		dow:   s.Dow & allDows,
		both:  s.Dom&starBit != 0 || s.Dow&starBit != 0,
	}
	n := 0
	e.firstMin = -1
	for h := 0; h < 24; h++ {
		if s.Hour&(1<<uint(h)) == 0 {
			continue
		}
		for m := 0; m < 60; m++ {
			if s.Minute&(1<<uint(m)) != 0 {
				b := h*60 + m
				e.minutes[b/64] |= 1 << uint(b%64)
				n++
				if e.firstMin < 0 {
					e.firstMin = b
				} else {
					e.maxGap = max(e.maxGap, b-e.lastMin)
				}
				e.lastMin = b
			}
		}
	}
	e.fullDay = n == minutesPerDay
	domAll, dowAll := e.dom == allDoms, e.dow == allDows
	if e.both {
		e.anyDay = domAll && dowAll
	} else {
		e.anyDay = domAll || dowAll
	}
	return e
}

func (e *expr) dayMatches(dom int, wd time.Weekday) bool {
	d := e.dom&(1<<uint(dom)) != 0
	w := e.dow&(1<<uint(wd)) != 0
	if e.both {
		return d && w
	}
	return d || w
}

// matcher is the union of several expressions: a minute matches when any expression matches.
type matcher struct {
	exprs []expr
	// months in which some expression can match; other months are skipped whole.
	months uint64
	// months in which some expression matches every minute; skipped whole when looking for a
	// minute that does not match.
	always uint64
}

func newMatcher(exprs []expr) *matcher {
	m := &matcher{exprs: exprs}
	for _, e := range exprs {
		m.months |= e.month
		if e.fullDay && e.anyDay {
			m.always |= e.month
		}
	}
	return m
}

type dayKind uint8

const (
	dayNone dayKind = iota
	dayAll
	daySome
)

// scanner searches a matcher's wall calendar. It caches the last day it looked at, so it is
// created per query and never shared between goroutines.
type scanner struct {
	m     *matcher
	valid bool
	day   int64
	year  int
	month time.Month
	kind  dayKind
	mask  dayMask
}

func (s *scanner) load(day int64) {
	if s.valid && s.day == day {
		return
	}
	s.valid, s.day = true, day
	t := time.Unix(day*secondsPerDay, 0).UTC()
	var dom int
	s.year, s.month, dom = t.Date()
	bit := uint64(1) << uint(s.month)
	switch {
	case s.m.months&bit == 0:
		s.kind = dayNone
		return
	case s.m.always&bit != 0:
		s.kind = dayAll
		return
	}
	wd := t.Weekday()
	s.kind = dayNone
	for i := range s.m.exprs {
		e := &s.m.exprs[i]
		if e.month&bit == 0 || !e.dayMatches(dom, wd) {
			continue
		}
		if e.fullDay {
			s.kind = dayAll
			return
		}
		if s.kind == dayNone {
			s.mask, s.kind = e.minutes, daySome
			continue
		}
		for j := range s.mask {
			s.mask[j] |= e.minutes[j]
		}
	}
}

// wholeMonth reports whether the loaded day's entire month lacks want, so a search can jump
// over it.
func (s *scanner) wholeMonth(want bool) bool {
	bit := uint64(1) << uint(s.month)
	if want {
		return s.m.months&bit == 0
	}
	return s.m.always&bit != 0
}

func (s *scanner) nextMonthDay() int64 {
	return time.Date(s.year, s.month+1, 1, 0, 0, 0, 0, time.UTC).Unix() / secondsPerDay
}

func (s *scanner) prevMonthDay() int64 {
	return time.Date(s.year, s.month, 1, 0, 0, 0, 0, time.UTC).Unix()/secondsPerDay - 1
}

// match reports whether wall minute w matches.
func (s *scanner) match(w int64) bool {
	day := floorDiv(w, minutesPerDay)
	s.load(day)
	switch s.kind {
	case dayAll:
		return true
	case dayNone:
		return false
	}
	b := int(w - day*minutesPerDay)
	return s.mask[b/64]&(1<<uint(b%64)) != 0
}

// findFwd returns the lowest wall minute in [lo, hi] whose match equals want. It visits each
// day at most once and skips months that cannot contain want, so the cost is bounded by the
// number of days in the range.
func (s *scanner) findFwd(lo, hi int64, want bool) (int64, bool) {
	if lo > hi || (!want && s.m.always == allMonths) {
		return 0, false
	}
	day := floorDiv(lo, minutesPerDay)
	from := int(lo - day*minutesPerDay)
	for {
		start := day * minutesPerDay
		if start > hi {
			return 0, false
		}
		to := minutesPerDay - 1
		if hi-start < int64(to) {
			to = int(hi - start)
		}
		s.load(day)
		switch {
		case s.kind == daySome:
			if b, ok := s.mask.first(from, to, want); ok {
				return start + int64(b), true
			}
			day++
		case (s.kind == dayAll) == want:
			return start + int64(from), true
		case s.wholeMonth(want):
			day = s.nextMonthDay()
		default:
			day++
		}
		from = 0
	}
}

// findBwd returns the highest wall minute in [lo, hi] whose match equals want.
func (s *scanner) findBwd(lo, hi int64, want bool) (int64, bool) {
	if lo > hi || (!want && s.m.always == allMonths) {
		return 0, false
	}
	day := floorDiv(hi, minutesPerDay)
	to := int(hi - day*minutesPerDay)
	for {
		start := day * minutesPerDay
		if start+minutesPerDay-1 < lo {
			return 0, false
		}
		from := 0
		if lo > start {
			from = int(lo - start)
		}
		s.load(day)
		switch {
		case s.kind == daySome:
			if b, ok := s.mask.last(from, to, want); ok {
				return start + int64(b), true
			}
			day--
		case (s.kind == dayAll) == want:
			return start + int64(to), true
		case s.wholeMonth(want):
			day = s.prevMonthDay()
		default:
			day--
		}
		to = minutesPerDay - 1
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	return -floorDiv(-a, b)
}
