package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	// Embedded zone data, so spec.timeZone works in images without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// maxItems mirrors the CRD's MaxItems on each list, so work stays bounded even for objects
// that did not go through the API server's validation.
const maxItems = 64

// Parse validates and compiles a spec. Each problem is reported as "<field>: <what is wrong>",
// naming the bad value; several problems are joined into one error.
func Parse(spec v1alpha1.GateKeeperSpec) (*Keeper, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch spec.Type {
	case "", v1alpha1.CronExpression:
	default:
		fail("spec.type: unsupported type '%s' (only %s)", spec.Type, v1alpha1.CronExpression)
	}

	loc, err := loadLocation(spec.TimeZone)
	if err != nil {
		errs = append(errs, err)
		loc = time.UTC // keep checking the rest
	}

	k := &Keeper{loc: loc}
	if cj := spec.CronJob; cj != nil {
		for _, l := range []struct {
			field string
			exprs []string
			into  *[]member
		}{
			{"spec.cronjob.closed", cj.Closed, &k.closed},
			{"spec.cronjob.opened", cj.Opened, &k.opened},
		} {
			if len(l.exprs) > maxItems {
				fail("%s: %d expressions, at most %d allowed", l.field, len(l.exprs), maxItems)
				continue
			}
			var compiled []expr
			for i, text := range l.exprs {
				s, err := parseCron(fmt.Sprintf("%s[%d]", l.field, i), text)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				compiled = append(compiled, compile(s))
			}
			if len(compiled) > 0 {
				// All bare expressions of one state share one matcher: a minute is in the
				// state when any of them matches.
				*l.into = append(*l.into, &bareSet{m: newMatcher(compiled), loc: loc})
			}
		}
	}

	if len(spec.Windows) > maxItems {
		fail("spec.windows: %d windows, at most %d allowed", len(spec.Windows), maxItems)
	} else {
		for i, w := range spec.Windows {
			field := fmt.Sprintf("spec.windows[%d]", i)
			s, err := parseCron(field+".schedule", w.Schedule)
			if err != nil {
				errs = append(errs, err)
			}
			d := w.Duration.Duration
			if d <= 0 {
				fail("%s.duration: must be longer than 0s, got '%s'", field, d)
			}
			var into *[]member
			switch w.State {
			case v1alpha1.GateClosed:
				into = &k.closed
			case v1alpha1.GateOpened:
				into = &k.opened
			default:
				fail("%s.state: must be opened or closed, got '%s'", field, w.State)
			}
			if err != nil || d <= 0 || into == nil {
				continue
			}
			*into = append(*into, &windowSet{
				m:        newMatcher([]expr{compile(s)}),
				loc:      loc,
				d:        d,
				mergeGap: int64(d / time.Minute),
			})
		}
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// A keeper that lists one state only describes when its gate is in that state: the rest of
	// the time it holds the gate in the other one ("change-freeze is only closed during the
	// change freezes", docs/gatekeeper.md).
	switch {
	case len(k.closed) > 0 && len(k.opened) == 0:
		k.outside = v1alpha1.ActiveOpened
	case len(k.opened) > 0 && len(k.closed) == 0:
		k.outside = v1alpha1.ActiveClosed
	default:
		k.outside = v1alpha1.ActiveNone
	}
	return k, nil
}

func loadLocation(name string) (*time.Location, error) {
	switch name {
	case "":
		return time.UTC, nil
	case "Local":
		// time.LoadLocation would return the controller's own zone.
		return nil, fmt.Errorf("spec.timeZone: unknown time zone '%s': use an IANA name such as Europe/London", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("spec.timeZone: unknown time zone '%s'", name)
	}
	return loc, nil
}

// parseCron parses a standard 5-field expression (or a descriptor such as @daily).
func parseCron(field, text string) (s *cron.SpecSchedule, err error) {
	trimmed := strings.TrimSpace(text)
	for _, prefix := range []string{"TZ=", "CRON_TZ="} {
		if strings.HasPrefix(trimmed, prefix) {
			return nil, fmt.Errorf("%s: cron expression '%s' sets its own time zone: remove the %s prefix and set spec.timeZone instead", field, text, prefix)
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
