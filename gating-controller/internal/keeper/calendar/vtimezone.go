package calendar

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	ical "github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

// A TZID names an IANA zone, or a zone the document defines in a VTIMEZONE: Outlook and Exchange
// write Windows names ("W. Europe Standard Time") with the rules of the zone, Google and
// Thunderbird add X-LIC-LOCATION with the IANA name.
const (
	propLicLocation = "X-LIC-LOCATION"
	// zoneHorizon is how far the onsets of a VTIMEZONE's rules are expanded: the Location
	// keeps the last offset beyond it.
	zoneHorizonYear = 2100
	// rulesFromYear is the first year a yearly rule's onsets are expanded from.
	rulesFromYear = 1900
	// maxOnsets bounds the onsets read from one VTIMEZONE.
	maxOnsets = 2000
)

// timezones resolves the TZIDs of one document, each at most once.
type timezones struct {
	defs  map[string]*ical.Component
	known map[string]*time.Location
}

func newTimezones(doc *ical.Calendar) *timezones {
	z := &timezones{defs: map[string]*ical.Component{}, known: map[string]*time.Location{}}
	for _, c := range doc.Children {
		if c.Name != ical.CompTimezone {
			continue
		}
		if id, err := c.Props.Text(ical.PropTimezoneID); err == nil && id != "" {
			z.defs[id] = c
		}
	}
	return z
}

// load is the zone of tzid: its IANA zone when it names one (more exact than a document's copy
// of the rules), else the document's VTIMEZONE of that TZID.
func (z *timezones) load(tzid string) (*time.Location, error) {
	if loc, ok := z.known[tzid]; ok {
		return loc, nil
	}
	loc, err := z.resolve(tzid)
	if err != nil {
		return nil, err
	}
	z.known[tzid] = loc
	return loc, nil
}

func (z *timezones) resolve(tzid string) (*time.Location, error) {
	if loc, ok := ianaZone(tzid); ok {
		return loc, nil
	}
	def := z.defs[tzid]
	if def == nil {
		return nil, fmt.Errorf("unknown time zone '%s': use an IANA name such as Europe/Berlin, or define it in a VTIMEZONE", tzid)
	}
	if name, err := def.Props.Text(propLicLocation); err == nil {
		if loc, ok := ianaZone(name); ok {
			return loc, nil
		}
	}
	loc, err := zoneOf(tzid, def)
	if err != nil {
		return nil, fmt.Errorf("VTIMEZONE '%s': %v", tzid, err)
	}
	return loc, nil
}

func ianaZone(name string) (*time.Location, bool) {
	name = strings.Trim(name, "/") // some producers write TZID=/Europe/Berlin
	if name == "" || name == "Local" {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	return loc, err == nil
}

// onset is a change of offset: at (UTC) the zone's offset becomes the one of its type.
type onset struct {
	at   int64
	from int // the offset before it
	typ  zoneType
}

type zoneType struct {
	offset int // seconds east of UTC
	dst    bool
	name   string
}

// zoneOf makes the Location a VTIMEZONE's STANDARD and DAYLIGHT observances define: each
// observance's onsets (DTSTART, RRULE, RDATE, in local time before the change: TZOFFSETFROM)
// until zoneHorizonYear, as the transitions of a TZif document Go reads.
func zoneOf(tzid string, def *ical.Component) (*time.Location, error) {
	var onsets []onset
	for _, obs := range def.Children {
		if obs.Name != ical.CompTimezoneStandard && obs.Name != ical.CompTimezoneDaylight {
			continue
		}
		got, err := observanceOnsets(obs)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", obs.Name, err)
		}
		onsets = append(onsets, got...)
		if len(onsets) > maxOnsets {
			return nil, fmt.Errorf("more than %d changes of offset before %d", maxOnsets, zoneHorizonYear)
		}
	}
	if len(onsets) == 0 {
		return nil, fmt.Errorf("no STANDARD or DAYLIGHT observance")
	}
	sort.SliceStable(onsets, func(i, j int) bool { return onsets[i].at < onsets[j].at })
	data, err := tzif(onsets)
	if err != nil {
		return nil, err
	}
	return time.LoadLocationFromTZData(tzid, data)
}

func observanceOnsets(obs *ical.Component) ([]onset, error) {
	from, err := utcOffset(obs.Props.Get(ical.PropTimezoneOffsetFrom))
	if err != nil {
		return nil, fmt.Errorf("TZOFFSETFROM: %v", err)
	}
	to, err := utcOffset(obs.Props.Get(ical.PropTimezoneOffsetTo))
	if err != nil {
		return nil, fmt.Errorf("TZOFFSETTO: %v", err)
	}
	name, _ := obs.Props.Text(ical.PropTimezoneName)
	typ := zoneType{offset: to, dst: obs.Name == ical.CompTimezoneDaylight, name: name}
	// Onsets are local times of the offset in force before them.
	before := time.FixedZone("", from)
	local := func(v string) (time.Time, error) {
		t, err := time.ParseInLocation("20060102T150405", strings.TrimSpace(v), before)
		if err != nil {
			return time.Time{}, fmt.Errorf("invalid local date-time '%s': want YYYYMMDDTHHMMSS", v)
		}
		return t, nil
	}
	p := obs.Props.Get(ical.PropDateTimeStart)
	if p == nil {
		return nil, fmt.Errorf("DTSTART is missing")
	}
	start, err := local(p.Value)
	if err != nil {
		return nil, fmt.Errorf("DTSTART: %v", err)
	}
	horizon := time.Date(zoneHorizonYear, 1, 1, 0, 0, 0, 0, time.UTC)
	out := []onset{{at: start.Unix(), from: from, typ: typ}}
	if p := obs.Props.Get(ical.PropRecurrenceRule); p != nil {
		opt, err := rrule.StrToROptionInLocation(p.Value, before)
		if err != nil {
			return nil, fmt.Errorf("RRULE '%s': %v", p.Value, err)
		}
		opt.Dtstart = start
		if opt.Freq == rrule.YEARLY && start.Year() < rulesFromYear {
			// Outlook starts its rules in 1601; rrule-go stops 292 years after DTSTART (the
			// range of a time.Duration). A yearly rule gives the same onsets from a later year.
			opt.Dtstart = time.Date(rulesFromYear, start.Month(), start.Day(), start.Hour(), start.Minute(), start.Second(), 0, before)
		}
		rule, err := rrule.NewRRule(*opt)
		if err != nil {
			return nil, fmt.Errorf("RRULE '%s': %v", p.Value, err)
		}
		out = out[:0] // DTSTART is the rule's first occurrence, when it is one at all
		next := rule.Iterator()
		for t, ok := next(); ok && t.Before(horizon); t, ok = next() {
			if len(out) == maxOnsets {
				return nil, fmt.Errorf("RRULE '%s': more than %d onsets before %d", p.Value, maxOnsets, zoneHorizonYear)
			}
			out = append(out, onset{at: t.Unix(), from: from, typ: typ})
		}
	}
	for _, p := range obs.Props.Values(ical.PropRecurrenceDates) {
		for _, v := range strings.Split(p.Value, ",") {
			t, err := local(v)
			if err != nil {
				return nil, fmt.Errorf("RDATE: %v", err)
			}
			out = append(out, onset{at: t.Unix(), from: from, typ: typ})
		}
	}
	return out, nil
}

// utcOffset reads a UTC-OFFSET value: +HHMM or -HHMM, with optional seconds.
func utcOffset(p *ical.Prop) (int, error) {
	if p == nil {
		return 0, fmt.Errorf("missing")
	}
	v := strings.TrimSpace(p.Value)
	if (len(v) != 5 && len(v) != 7) || (v[0] != '+' && v[0] != '-') {
		return 0, fmt.Errorf("invalid offset '%s': want +HHMM or -HHMM", v)
	}
	n, err := strconv.Atoi(v[1:])
	if err != nil {
		return 0, fmt.Errorf("invalid offset '%s': want +HHMM or -HHMM", v)
	}
	if len(v) == 5 {
		n *= 100
	}
	h, m, s := n/10000, n/100%100, n%100
	if h > 23 || m > 59 || s > 59 {
		return 0, fmt.Errorf("invalid offset '%s'", v)
	}
	secs := h*3600 + m*60 + s
	if v[0] == '-' {
		secs = -secs
	}
	return secs, nil
}

// tzif encodes onsets, sorted, as a version 2 TZif document (RFC 8536) for
// time.LoadLocationFromTZData. Type 0, used by no transition, is the zone before the first
// onset: its TZOFFSETFROM, as Go takes an unused first type for it.
func tzif(onsets []onset) ([]byte, error) {
	first := zoneType{offset: onsets[0].from}
	types := []zoneType{first}
	index := map[zoneType]int{}
	var names bytes.Buffer
	abbr := map[string]int{}
	nameOf := func(t zoneType) string {
		if t.name != "" {
			return t.name
		}
		return time.Unix(0, 0).In(time.FixedZone("", t.offset)).Format("-0700")
	}
	addName := func(t zoneType) {
		if _, ok := abbr[nameOf(t)]; !ok {
			abbr[nameOf(t)] = names.Len()
			names.WriteString(nameOf(t))
			names.WriteByte(0)
		}
	}
	addName(first)
	txTypes := make([]byte, len(onsets))
	for i, o := range onsets {
		j, ok := index[o.typ]
		if !ok {
			j = len(types)
			index[o.typ] = j
			types = append(types, o.typ)
			addName(o.typ)
		}
		txTypes[i] = byte(j)
	}
	if len(types) > 255 || names.Len() > 255 {
		return nil, fmt.Errorf("too many different offsets and names (TZNAME)")
	}

	var b bytes.Buffer
	header := func(timecnt, typecnt, charcnt int) {
		b.WriteString("TZif2")
		b.Write(make([]byte, 15))
		for _, n := range []int{0, 0, 0, timecnt, typecnt, charcnt} { // isut, isstd, leap, time, type, char
			_ = binary.Write(&b, binary.BigEndian, uint32(n))
		}
	}
	// The version 1 block, which readers of version 2 skip: one type, one empty name.
	header(0, 1, 1)
	b.Write([]byte{0, 0, 0, 0, 0, 0, 0})
	header(len(onsets), len(types), names.Len())
	for _, o := range onsets {
		_ = binary.Write(&b, binary.BigEndian, o.at)
	}
	b.Write(txTypes)
	for _, t := range types {
		_ = binary.Write(&b, binary.BigEndian, int32(t.offset))
		dst := byte(0)
		if t.dst {
			dst = 1
		}
		b.WriteByte(dst)
		b.WriteByte(byte(abbr[nameOf(t)]))
	}
	b.Write(names.Bytes())
	b.WriteString("\n\n") // no TZ string: beyond the last onset, its offset stays
	return b.Bytes(), nil
}
