package gatestate

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

// freezeUntilNoon is a keeper that holds its gate closed from 08:00 to 12:00 each day.
func freezeUntilNoon(t *testing.T) Keeper {
	t.Helper()
	s, err := keeper.Parse(gatingv1.GateKeeperSpec{Gate: "prod", CronJob: &gatingv1.CronJob{Closed: []string{"* 8-11 * * *"}}})
	if err != nil {
		t.Fatal(err)
	}
	return Keeper{Name: "freeze", Schedule: s}
}

func TestDecide(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { return new(metav1.NewTime(now.Add(d))) }
	noon := now.Add(3 * time.Hour)
	broken := Keeper{Name: "freeze", Err: errors.New("spec.cronjob.closed[0]: bad"), FailsClosed: true}
	for name, tc := range map[string]struct {
		status  gatingv1.GateStatus
		keepers func(t *testing.T) []Keeper
		want    Decision
		cause   string
	}{
		"the default": {
			want:  Decision{State: gatingv1.GateOpened, Cause: "default", Message: "Gate opened by default"},
			cause: "Gate opened by default",
		},
		"a keeper's schedule, until it ends": {
			keepers: func(t *testing.T) []Keeper { return []Keeper{freezeUntilNoon(t)} },
			want: Decision{State: gatingv1.GateClosed, Cause: "gatekeeper/freeze", Next: &noon,
				Message: "Gate scheduled for opening at 2026-03-02T12:00:00Z"},
			cause: "Gate closed by the schedule of GateKeeper 'freeze' until 2026-03-02T12:00:00Z",
		},
		"a request overrides the keeper for its window": {
			status: gatingv1.GateStatus{RequestedAt: at(-time.Minute), ResetToDefaultAt: at(time.Hour),
				Request: &gatingv1.GateRequest{State: gatingv1.GateOpened, Reason: "hotfix", RequestedBy: "ana"}},
			keepers: func(t *testing.T) []Keeper { return []Keeper{freezeUntilNoon(t)} },
			want: Decision{State: gatingv1.GateOpened, Cause: "request", Reason: "hotfix", RequestedBy: "ana", Next: new(now.Add(time.Hour)),
				Message: "Gate scheduled for closing at 2026-03-02T10:00:00Z"},
			cause: "Gate opened by the open request of ana until 2026-03-02T10:00:00Z (for 1h1m0s)",
		},
		"a promotion does not override a freeze; it opens for its revision after": {
			status: gatingv1.GateStatus{RequestedAt: at(-time.Minute),
				Request: &gatingv1.GateRequest{State: gatingv1.GateOpened, RequestedBy: "promotion", Revision: "main@sha1:r1"}},
			keepers: func(t *testing.T) []Keeper { return []Keeper{freezeUntilNoon(t)} },
			want: Decision{State: gatingv1.GateClosed, Cause: "gatekeeper/freeze", Next: &noon,
				Message: "Gate scheduled for opening at 2026-03-02T12:00:00Z"},
			cause: "Gate closed by the schedule of GateKeeper 'freeze' until 2026-03-02T12:00:00Z",
		},
		"a promotion opens for its revision": {
			status: gatingv1.GateStatus{RequestedAt: at(-time.Minute),
				Request: &gatingv1.GateRequest{State: gatingv1.GateOpened, RequestedBy: "promotion", Revision: "main@sha1:r1", Reason: "soaked"}},
			want: Decision{State: gatingv1.GateOpened, Cause: "request", RequestedBy: "promotion", Reason: "soaked", Revision: "main@sha1:r1",
				Message: "Gate opened for revision 'main@sha1:r1' by promotion"},
			cause: "Gate opened for revision 'main@sha1:r1' by the open request of promotion until the next request (no duration and no spec.window: it does not end by itself)",
		},
		"a failing check closes whatever else": {
			status: gatingv1.GateStatus{RequestedAt: at(-time.Minute), Checks: "check 'x' readyExpr evaluated to false",
				Request: &gatingv1.GateRequest{State: gatingv1.GateOpened, RequestedBy: "ana"}},
			want: Decision{State: gatingv1.GateClosed, Cause: "checks", Reason: "check 'x' readyExpr evaluated to false",
				Message: "Gate closed by a failing check"},
			cause: "Gate closed as a check fails: check 'x' readyExpr evaluated to false",
		},
		"an approved request does not override a freeze": {
			status: gatingv1.GateStatus{RequestedAt: at(-time.Minute),
				Request: &gatingv1.GateRequest{State: gatingv1.GateOpened, ApprovedBy: []string{"bo"}}},
			keepers: func(t *testing.T) []Keeper { return []Keeper{freezeUntilNoon(t)} },
			want: Decision{State: gatingv1.GateClosed, Cause: "gatekeeper/freeze", Next: &noon,
				Message: "Gate scheduled for opening at 2026-03-02T12:00:00Z"},
			cause: "Gate closed by the schedule of GateKeeper 'freeze' until 2026-03-02T12:00:00Z",
		},
		"an approved request, without a freeze": {
			status: gatingv1.GateStatus{RequestedAt: at(-time.Minute),
				Request: &gatingv1.GateRequest{State: gatingv1.GateOpened, RequestedBy: "ana", ApprovedBy: []string{"bo"}, Revision: "main@sha1:abc"}},
			want: Decision{State: gatingv1.GateOpened, Cause: "approval", RequestedBy: "ana", ApprovedBy: []string{"bo"}, Revision: "main@sha1:abc",
				Message: "Gate opened by approval"},
			cause: "Gate opened for revision 'main@sha1:abc' by the open request of ana, approved by bo, until the next request (no duration and no spec.window: it does not end by itself)",
		},
		"a broken keeper holds the gate closed": {
			keepers: func(*testing.T) []Keeper { return []Keeper{broken} },
			want: Decision{State: gatingv1.GateClosed, Cause: "gatekeeper/freeze", Broken: true, Reason: "invalid schedule: spec.cronjob.closed[0]: bad",
				Message: "Gate closed as GateKeeper 'freeze' cannot be evaluated"},
			cause: "Gate closed as GateKeeper 'freeze' cannot be evaluated (a broken schedule holds its gate closed until it is fixed)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var keepers []Keeper
			if tc.keepers != nil {
				keepers = tc.keepers(t)
			}
			in := NewInputs(&gatingv1.Gate{Status: tc.status}, keepers)
			d := in.Decide(now)
			g.Expect(d).To(Equal(tc.want))
			g.Expect(in.Cause(d)).To(Equal(tc.cause))
		})
	}
}
