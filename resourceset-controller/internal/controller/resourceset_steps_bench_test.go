package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkResourceSetSteps1000 applies one ResourceSet of 1,000 ConfigMaps in 3 steps (334,
// 333, 333; each step but the last health-checked before the next) and reports the time to
// Ready, a no-op reconcile's time and the API requests of each, to compare with
// BenchmarkResourceSetApply1000 (no steps).
//
//	go test -run '^$' -bench ResourceSetSteps1000 -benchtime 1x ./internal/controller/
func BenchmarkResourceSetSteps1000(b *testing.B) {
	warmUp(b)
	for b.Loop() {
		ns := tenantNamespace(b)
		var inputs strings.Builder
		for n := range 1000 {
			fmt.Fprintf(&inputs, "    - idx: %d\n", n)
		}
		var steps strings.Builder
		for s, cut := range [][2]int{{0, 334}, {334, 667}, {667, 1000}} {
			fmt.Fprintf(&steps, `    - name: step-%d
      resourcesTemplate: |
        << if and (ge (int inputs.idx) %d) (lt (int inputs.idx) %d) >>
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: cm-<< inputs.idx >>
          namespace: NAMESPACE
        << end >>
`, s, cut[0], cut[1])
		}
		apiCalls.reset()
		start := time.Now()
		key := createResourceSet(b, ns, `
metadata:
  name: bench
spec:
  inputs:
`+inputs.String()+`  steps:
`+steps.String())
		measureApplyAndNoop(b, key, start)
	}
}
