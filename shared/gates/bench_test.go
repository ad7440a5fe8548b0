package gates_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/gates"
)

// BenchmarkRelease1000Consumers measures, against the real API server, how long after a Gate
// opens its 1,000 consumers have all been reconciled again, through the spec.gates.refs index
// and the Gate watch every gated controller uses (one reconcile at a time, the default):
//
//	go test -run '^$' -bench Release1000Consumers -benchtime 1x ./gates/
func BenchmarkRelease1000Consumers(b *testing.B) {
	g := NewWithT(b)
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		ns := newNamespace(b)
		rec := startConsumerController(b)
		gate := createGate(b, ns, "release", closed())
		keys := make([]types.NamespacedName, 1000)
		for i := range keys {
			keys[i] = createConsumer(b, ns, fmt.Sprintf("consumer-%04d", i), &gates.Gates{Refs: []string{"release"}})
		}
		for _, k := range keys {
			g.Eventually(func() int { return rec.count(k) }, time.Minute).Should(Equal(1))
		}
		b.StartTimer()

		start := time.Now()
		setGateStatus(b, gate, opened())
		for _, k := range keys {
			g.Eventually(func() int { return rec.count(k) }, time.Minute, time.Millisecond).Should(Equal(2), k.String())
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/release")
}
