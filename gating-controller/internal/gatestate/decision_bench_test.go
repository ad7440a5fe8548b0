package gatestate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
)

// The evaluation of a gate kept by 20 GateKeepers in five time zones: its state now and its
// next change of state, what every reconcile of the gate computes.
func BenchmarkGateDecide20Keepers(b *testing.B) {
	zones := []string{"", "Europe/London", "America/New_York", "Asia/Tokyo", "Australia/Sydney"}
	var keepers []Keeper
	for i := range 20 {
		spec := gatingv1.GateKeeperSpec{Gate: "prod", TimeZone: zones[i%len(zones)]}
		switch i % 4 {
		case 0:
			spec.CronJob = &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *", "* * 15-31 12 *"}}
		case 1:
			spec.CronJob = &gatingv1.CronJob{Opened: []string{"* 9-16 * * MON-FRI"}}
		case 2:
			spec.Windows = []gatingv1.Window{{Schedule: "0 18 * * FRI", Duration: metav1.Duration{Duration: 63 * time.Hour}, State: gatingv1.GateClosed}}
		case 3:
			spec.CronJob = &gatingv1.CronJob{Closed: []string{"*/15 2-4 * * *"}, Opened: []string{"0 0 1 * *"}}
			spec.Windows = []gatingv1.Window{{Schedule: "30 12 * * *", Duration: metav1.Duration{Duration: 45 * time.Minute}, State: gatingv1.GateOpened}}
		}
		s, err := keeper.Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		keepers = append(keepers, Keeper{Name: "k", Schedule: s})
	}
	in := NewInputs(&gatingv1.Gate{Spec: gatingv1.GateSpec{Default: gatingv1.GateOpened}}, keepers)
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if d := in.Decide(now); d.Message == "" {
			b.Fatal("no decision")
		}
	}
}
