package keeper

import (
	"testing"
	"time"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

var sinkTime time.Time

func benchNext(b *testing.B, k *Keeper, at time.Time) {
	b.ReportAllocs()
	for b.Loop() {
		sinkTime, _ = k.NextTransition(at)
	}
}

func BenchmarkNextTransitionBlackFriday(b *testing.B) {
	k := mustParse(b, specOf("", []string{"* * 20-30 11 *"}, nil))
	benchNext(b, k, ts("2026-01-01T00:00:00Z"))
}

func BenchmarkNextTransitionHostile(b *testing.B) {
	k := mustParse(b, specOf("", []string{"* * * * *"}, nil, window("* * * * *", "8760h", v1alpha1.GateClosed)))
	benchNext(b, k, ts("2026-05-04T09:00:00Z"))
}

// The window alone: no expression shows it never ends, so its run is followed to the horizon.
func BenchmarkNextTransitionHostileWindowOnly(b *testing.B) {
	k := mustParse(b, specOf("Europe/London", nil, nil, window("* * * * *", "8760h", v1alpha1.GateClosed)))
	benchNext(b, k, ts("2026-05-04T09:00:30Z"))
}

// The worst case known: one-minute stretches of an expression and a window relaying each other
// for ever, so NextTransition spends its whole merge budget (maxMergeSteps).
func BenchmarkNextTransitionRelay(b *testing.B) {
	k := mustParse(b, specOf("Europe/London", []string{"1-59/2 * * * *"}, nil, window("*/2 * * * *", "1m", v1alpha1.GateClosed)))
	benchNext(b, k, ts("2026-05-04T09:00:30Z"))
}

func BenchmarkAt64Expressions(b *testing.B) {
	var exprs []string
	for i := range 64 {
		exprs = append(exprs, []string{"* 1 * * *", "*/7 2-3 * * MON", "0 4 1-15 * *", "30 5 * 1-6 *"}[i%4])
	}
	k := mustParse(b, specOf("Europe/London", exprs, []string{"* * * * *"}, window("0 18 * * FRI", "63h", v1alpha1.GateClosed)))
	at := ts("2026-05-04T09:00:30Z")
	b.ReportAllocs()
	for b.Loop() {
		_ = k.At(at)
	}
}

func BenchmarkNextTransition64Expressions(b *testing.B) {
	var exprs []string
	for i := range 64 {
		exprs = append(exprs, []string{"* 1 * * *", "*/7 2-3 * * MON", "0 4 1-15 * *", "30 5 * 1-6 *"}[i%4])
	}
	k := mustParse(b, specOf("Europe/London", exprs, []string{"* * * * *"}, window("0 18 * * FRI", "63h", v1alpha1.GateClosed)))
	benchNext(b, k, ts("2026-05-04T09:00:30Z"))
}
