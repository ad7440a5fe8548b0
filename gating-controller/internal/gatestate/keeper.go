package gatestate

import (
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

// Keeper is a GateKeeper of a gate as its state sees it: its compiled schedule, or the error
// that keeps it from being evaluated.
type Keeper struct {
	Name     string
	Schedule *keeper.Keeper
	// Err is why the spec does not parse; Schedule is nil then.
	Err error
	// FailsClosed: the keeper is broken and could close its gate.
	FailsClosed bool
	// Retry: how soon the gate looks again at the keeper's calendar, which no watch may report
	// on; zero when one does.
	Retry time.Duration
}

// Holds is the state the keeper holds its gate in at t. A broken keeper that could close its
// gate holds it closed for as long as it is broken: a change freeze that cannot be evaluated
// must not leave the gate open.
func (k Keeper) Holds(t time.Time) gatingv1.GateKeeperActive {
	switch {
	case k.Schedule != nil:
		return gatingv1.GateKeeperActive(k.Schedule.Holds(t))
	case k.FailsClosed:
		return gatingv1.ActiveClosed
	default:
		return gatingv1.ActiveNone
	}
}

// Broken: the keeper exists and cannot be evaluated.
func (k *Keeper) Broken() bool { return k != nil && k.Err != nil }
