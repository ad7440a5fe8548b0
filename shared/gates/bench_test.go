package gates_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// BenchmarkRelease1000Consumers measures, against the real API server, how long after a Gate
// opens its 1,000 consumers have all been reconciled again, through the spec.gates.refs index
// and the Gate watch every gated controller uses (one reconcile at a time, the default):
//
//	go test -run '^$' -bench Release1000Consumers ./gates/
func BenchmarkRelease1000Consumers(b *testing.B) {
	g := NewWithT(b)
	ns := env.Namespace(b)
	rec := startConsumerController(b)
	gate := createGate(b, ns, "release", closed())
	keys := make([]types.NamespacedName, 1000)
	for i := range keys {
		keys[i] = createConsumer(b, ns, fmt.Sprintf("consumer-%04d", i), &gatesapi.Gates{Refs: []string{"release"}})
	}
	// settled waits until every consumer has been reconciled more than before[k] times, and
	// returns the new counts.
	settled := func(before map[types.NamespacedName]int) map[types.NamespacedName]int {
		after := make(map[types.NamespacedName]int, len(keys))
		for _, k := range keys {
			g.Eventually(func() int { return rec.count(k) }, time.Minute, time.Millisecond).Should(BeNumerically(">", before[k]), k.String())
			after[k] = rec.count(k)
		}
		return after
	}
	counts := settled(nil)

	var total time.Duration
	for b.Loop() {
		start := time.Now()
		setGateStatus(b, gate, opened())
		counts = settled(counts)
		total += time.Since(start)

		b.StopTimer()
		setGateStatus(b, gate, closed())
		counts = settled(counts)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/release")
}
