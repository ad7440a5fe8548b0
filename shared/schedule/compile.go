package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	// Embedded zone data, so time zones work in images without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// MaxItems bounds each list of a Spec, so work stays bounded even for objects that did not go
// through the API server's validation (the CRDs say the same).
const MaxItems = 64

// Spec is what a Keeper is compiled from, in the terms of the API that holds it: each part
// carries the field path its errors name ("spec.cronjob.closed[0]", "spec.schedule[1].cron").
type Spec struct {
	// TimeZone is an IANA name; empty is UTC. TimeZoneField names it in errors.
	TimeZone      string
	TimeZoneField string
	// Expressions are bare cron expressions: active during every minute they match.
	Expressions []Expressions
	// Windows are active from each activation of their cron expression for their duration.
	Windows []Window
}

// Expressions are the bare cron expressions of one state.
type Expressions struct {
	Field string
	State State
	Exprs []string
}

// Window is one window of a state.
type Window struct {
	// Field prefixes the errors; CronField and DurationField name its two parts.
	Field, CronField, DurationField string
	State                           State
	Cron                            string
	Duration                        time.Duration
}

// Compile validates and compiles a spec. Each problem is reported as "<field>: <what is wrong>",
// naming the bad value; several problems are joined into one error.
func Compile(spec Spec) (*Keeper, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	loc, err := loadLocation(spec.TimeZoneField, spec.TimeZone)
	if err != nil {
		errs = append(errs, err)
		loc = time.UTC // keep checking the rest
	}
	k := &Keeper{loc: loc}
	into := func(state State) *[]member {
		if state == Closed {
			return &k.closed
		}
		return &k.opened
	}
	for _, l := range spec.Expressions {
		if len(l.Exprs) > MaxItems {
			fail("%s: %d expressions, at most %d allowed", l.Field, len(l.Exprs), MaxItems)
			continue
		}
		var compiled []expr
		for i, text := range l.Exprs {
			s, err := parseCron(fmt.Sprintf("%s[%d]", l.Field, i), text, spec.TimeZoneField)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			compiled = append(compiled, compile(s))
		}
		if len(compiled) > 0 {
			// All bare expressions of one state share one matcher: a minute is in the state
			// when any of them matches.
			list := into(l.State)
			*list = append(*list, &bareSet{m: newMatcher(compiled), loc: loc})
		}
	}
	for _, w := range spec.Windows {
		s, err := parseCron(w.CronField, w.Cron, spec.TimeZoneField)
		if err != nil {
			errs = append(errs, err)
		}
		if w.Duration <= 0 {
			fail("%s: must be longer than 0s, got '%s'", w.DurationField, w.Duration)
		}
		if err != nil || w.Duration <= 0 {
			continue
		}
		list := into(w.State)
		*list = append(*list, &windowSet{
			m:        newMatcher([]expr{compile(s)}),
			loc:      loc,
			d:        w.Duration,
			mergeGap: int64(w.Duration / time.Minute),
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Schedules of one state only describe when that state holds: the rest of the time the
	// other one does ("change-freeze is only closed during the change freezes").
	switch {
	case len(k.closed) > 0 && len(k.opened) == 0:
		k.outside = Opened
	case len(k.opened) > 0 && len(k.closed) == 0:
		k.outside = Closed
	default:
		k.outside = None
	}
	return k, nil
}

func loadLocation(field, name string) (*time.Location, error) {
	switch name {
	case "":
		return time.UTC, nil
	case "Local":
		// time.LoadLocation would return the controller's own zone.
		return nil, fmt.Errorf("%s: unknown time zone '%s': use an IANA name such as Europe/London", field, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%s: unknown time zone '%s'", field, name)
	}
	return loc, nil
}

// parseCron parses a standard 5-field expression (or a descriptor such as @daily).
func parseCron(field, text, tzField string) (s *cron.SpecSchedule, err error) {
	trimmed := strings.TrimSpace(text)
	for _, prefix := range []string{"TZ=", "CRON_TZ="} {
		if strings.HasPrefix(trimmed, prefix) {
			return nil, fmt.Errorf("%s: cron expression '%s' sets its own time zone: remove the %s prefix and set %s instead", field, text, prefix, tzField)
		}
	}
	// robfig/cron panics on some malformed input; report it like any other parse error.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%s: invalid cron expression '%s': %v", field, text, r)
		}
	}()
	sched, err := cron.ParseStandard(trimmed)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid cron expression '%s': %w", field, text, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported cron expression '%s': @every is not a calendar schedule, use 5 fields", field, text)
	}
	return spec, nil
}
