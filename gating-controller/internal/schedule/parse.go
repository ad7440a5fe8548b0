package schedule

import (
	"errors"
	"fmt"

	"github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Keeper is a compiled GateKeeper spec (shared/schedule, the semantics every Sluice schedule
// shares: DST, windows, bounded work).
type Keeper = schedule.Keeper

// Transition is a change of the state a keeper holds its gate in.
type Transition = schedule.Transition

// Horizon is how far ahead a keeper's next transition is looked for.
const Horizon = schedule.Horizon

// Parse validates and compiles a GateKeeper spec. Each problem is reported as "<field>: <what
// is wrong>", naming the bad value; several problems are joined into one error.
func Parse(spec v1alpha1.GateKeeperSpec) (*Keeper, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch spec.Type {
	case "", v1alpha1.CronExpression:
	default:
		fail("spec.type: unsupported type '%s' (only %s)", spec.Type, v1alpha1.CronExpression)
	}
	s := schedule.Spec{TimeZone: spec.TimeZone, TimeZoneField: "spec.timeZone"}
	if cj := spec.CronJob; cj != nil {
		s.Expressions = []schedule.Expressions{
			{Field: "spec.cronjob.closed", State: schedule.Closed, Exprs: cj.Closed},
			{Field: "spec.cronjob.opened", State: schedule.Opened, Exprs: cj.Opened},
		}
	}
	if len(spec.Windows) > schedule.MaxItems {
		fail("spec.windows: %d windows, at most %d allowed", len(spec.Windows), schedule.MaxItems)
	} else {
		for i, w := range spec.Windows {
			field := fmt.Sprintf("spec.windows[%d]", i)
			var state schedule.State
			switch w.State {
			case v1alpha1.GateClosed:
				state = schedule.Closed
			case v1alpha1.GateOpened:
				state = schedule.Opened
			default:
				fail("%s.state: must be opened or closed, got '%s'", field, w.State)
				state = schedule.Closed // keep checking the rest
			}
			s.Windows = append(s.Windows, schedule.Window{Field: field, CronField: field + ".schedule", DurationField: field + ".duration",
				State: state, Cron: w.Schedule, Duration: w.Duration.Duration})
		}
	}
	k, err := schedule.Compile(s)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return k, nil
}
