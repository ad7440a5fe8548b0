package keeper

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Event names what holds the gate in the keeper's state: the calendar event or period it is in
// (a closed one from the runway before it), never one of the other state, and nothing between
// events or while a cron expression decides.
func TestEvent(t *testing.T) {
	g := NewWithT(t)
	spec := v1alpha1.GateKeeperSpec{Gate: "g", TimeZone: "Europe/Berlin",
		Runway:   &metav1.Duration{Duration: 6 * time.Hour},
		CronJob:  &v1alpha1.CronJob{Closed: []string{"* * 20-30 11 *"}},
		Calendar: &v1alpha1.Calendar{ConfigMapRef: &v1alpha1.ConfigMapKeyRef{Name: "c", Key: "k"}},
		Periods: []v1alpha1.Period{
			{Name: "launch", Start: "2026-11-25T10:00:00Z", End: "2026-11-25T12:00:00Z", State: v1alpha1.GateOpened},
			{Start: "2026-12-10T10:00:00Z", End: "2026-12-10T12:00:00Z"},
		}}
	k := compileCal(t, spec, xmas, ts("2026-11-01T00:00:00Z"))
	for at, want := range map[string]string{
		"2026-12-24T12:00:00Z": "Christmas",
		"2026-12-23T17:00:00Z": "Christmas", // the runway before it
		"2026-12-23T16:59:59Z": "",          // opened between the events
		"2026-12-10T11:00:00Z": "",          // a period without a name
		"2026-11-22T12:00:00Z": "",          // the cron expression
		"2026-11-25T11:00:00Z": "",          // the opened launch, while the cron freeze closes the gate
	} {
		g.Expect(k.Event(ts(at))).To(Equal(want), at)
	}
	// The launch names the gate's state when nothing closes it.
	spec.CronJob = nil
	k = compileCal(t, spec, xmas, ts("2026-11-01T00:00:00Z"))
	g.Expect(k.Holds(ts("2026-11-25T11:00:00Z"))).To(BeEquivalentTo(v1alpha1.GateOpened))
	g.Expect(k.Event(ts("2026-11-25T11:00:00Z"))).To(Equal("launch"))
}
