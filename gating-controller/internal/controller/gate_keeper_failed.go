package controller

import (
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
)

const (
	// KeeperFailedCondition is True on a Gate while one of its GateKeepers cannot be evaluated: a
	// typo in a freeze schedule must show on the gate it was meant to close, not only on the keeper.
	KeeperFailedCondition = "KeeperFailed"
	// KeeperRecoveredReason is the event reason of a gate whose broken keepers were all fixed or
	// deleted.
	KeeperRecoveredReason = "KeeperRecovered"
)

// failsClosed decides what a GateKeeper that cannot be evaluated does to its gate: it holds it
// closed when the keeper could close the gate at all, which is whenever it lists a schedule. A
// `closed` expression or window closes the gate while active (a change freeze), and a keeper of
// `opened` schedules only holds the gate closed outside them; as nobody can tell when a broken
// schedule would be active, the safe state is closed. A keeper that lists no schedule (only a
// bad time zone, say) never affects its gate, broken or not.
func failsClosed(spec gatingv1.GateKeeperSpec) bool {
	if len(spec.Windows) > 0 || len(spec.Periods) > 0 || spec.Calendar != nil {
		return true
	}
	return spec.CronJob != nil && (len(spec.CronJob.Closed) > 0 || len(spec.CronJob.Opened) > 0)
}

// keeperFailures is the message of the KeeperFailed condition: each broken keeper, by name, with
// what it does to the gate and its parse error; empty when every keeper is fine.
func keeperFailures(keepers []gatestate.Keeper) string {
	var parts []string
	for _, k := range keepers {
		if k.Err == nil {
			continue
		}
		effect := "the gate is held closed until it is fixed"
		if !k.FailsClosed {
			effect = "it lists no schedule and does not affect the gate"
		}
		parts = append(parts, fmt.Sprintf("GateKeeper '%s' cannot be evaluated, %s: %s", k.Name, effect, k.Err))
	}
	return strings.Join(parts, "; ")
}

// markKeeperFailed sets or removes the KeeperFailed condition and says what changed, for the
// event: the new message when the failures are new or different, recovered when they are gone.
func markKeeperFailed(gate *gatingv1.Gate, keepers []gatestate.Keeper) (failed string, recovered bool) {
	msg := keeperFailures(keepers)
	old := conditions.Get(gate, KeeperFailedCondition)
	if msg == "" {
		conditions.Delete(gate, KeeperFailedCondition)
		return "", old != nil && old.Status == metav1.ConditionTrue
	}
	conditions.MarkTrue(gate, KeeperFailedCondition, InvalidScheduleReason, "%s", msg)
	if old != nil && old.Status == metav1.ConditionTrue && old.Message == msg {
		return "", false // already reported
	}
	return msg, false
}
