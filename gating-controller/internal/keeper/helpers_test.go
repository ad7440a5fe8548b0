package keeper

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ss "github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// ts parses an RFC 3339 instant.
func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func window(schedule, duration string, state v1alpha1.GateState) v1alpha1.Window {
	d, err := time.ParseDuration(duration)
	if err != nil {
		panic(err)
	}
	return v1alpha1.Window{Schedule: schedule, Duration: metav1.Duration{Duration: d}, State: state}
}

// specOf builds a spec; nil lists are left out.
func specOf(tz string, closed, opened []string, windows ...v1alpha1.Window) v1alpha1.GateKeeperSpec {
	spec := v1alpha1.GateKeeperSpec{Gate: "g", Type: v1alpha1.CronExpression, TimeZone: tz, Windows: windows}
	if closed != nil || opened != nil {
		spec.CronJob = &v1alpha1.CronJob{Closed: closed, Opened: opened}
	}
	return spec
}

func mustParse(t testing.TB, spec v1alpha1.GateKeeperSpec) *Keeper {
	t.Helper()
	k, err := Parse(spec)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return k
}

// point is one expectation: the state at a time and the next transition ("" for none).
type point struct {
	at    string
	state ss.State
	next  string
}

func expectPoints(g *WithT, state func(time.Time) ss.State, next func(time.Time) (time.Time, bool), points []point) {
	for _, p := range points {
		at := ts(p.at)
		g.Expect(state(at)).To(Equal(p.state), "state at %s", p.at)
		n, ok := next(at)
		if p.next == "" {
			g.Expect(ok).To(BeFalse(), "no transition after %s, got %s", p.at, n)
			continue
		}
		g.Expect(ok).To(BeTrue(), "a transition after %s", p.at)
		g.Expect(n.UTC()).To(Equal(ts(p.next).UTC()), "next transition after %s", p.at)
	}
}

func expectKeeper(g *WithT, k *Keeper, points []point) {
	expectPoints(g, k.At, k.NextTransition, points)
}
