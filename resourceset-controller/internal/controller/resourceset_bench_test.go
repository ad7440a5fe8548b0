package controller

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// BenchmarkResourceSetApply1000 applies one ResourceSet rendering 1,000 ConfigMaps against the
// test API server, then measures a no-op reconcile of it (a reconcile request with nothing
// changed). It reports the time to Ready, the no-op reconcile time and the API requests of each.
//
//	go test -run '^$' -bench ResourceSetApply1000 -benchtime 1x ./internal/controller/
func BenchmarkResourceSetApply1000(b *testing.B) {
	benchObjects := 1000
	if v := os.Getenv("BENCH_OBJECTS"); v != "" {
		benchObjects, _ = strconv.Atoi(v)
	}
	warmUp(b)
	for i := 0; b.Loop(); i++ {
		ns := tenantNamespace(b)
		var inputs strings.Builder
		for n := range benchObjects {
			fmt.Fprintf(&inputs, "    - idx: %q\n", fmt.Sprint(n))
		}
		apiCalls.reset()
		start := time.Now()
		key := createResourceSet(b, ns, `
metadata:
  name: bench
spec:
  inputs:
`+inputs.String()+`  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cm-<< inputs.idx >>
        namespace: NAMESPACE
      data:
        idx: << inputs.idx | quote >>
`)
		measureApplyAndNoop(b, key, start)
	}
}

// measureApplyAndNoop reports the time to Ready of a ResourceSet created at start and the API
// requests since the last reset, then the same for a no-op reconcile of it (a reconcile request
// with nothing changed).
func measureApplyAndNoop(b *testing.B, key client.ObjectKey, start time.Time) {
	waitReady(b, key, "")
	b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")
	b.ReportMetric(float64(total(apiCalls.reset())), "requests-apply")

	rs := &rsv1.ResourceSet{}
	rs.Namespace, rs.Name = key.Namespace, key.Name
	start = time.Now()
	annotate(b, rs, "reconcile.fluxcd.io/requestedAt", "noop")
	waitReady(b, key, "noop")
	b.ReportMetric(time.Since(start).Seconds(), "s-noop-reconcile")
	calls := apiCalls.reset()
	b.ReportMetric(float64(total(calls)), "requests-noop")
	b.Logf("no-op reconcile requests by method: %v", calls)
}

// warmUp applies a first ResourceSet before a measure: the API server's first request for a CRD
// builds its handler (a second or two here), done once in a running cluster.
func warmUp(b *testing.B) {
	waitReady(b, createResourceSet(b, tenantNamespace(b), `
metadata:
  name: warm-up
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: warm-up
`), "")
}

// waitReady waits until the ResourceSet handled the request and is Ready.
func waitReady(b *testing.B, key client.ObjectKey, request string) {
	g := NewWithT(b)
	g.Eventually(func(g Gomega) bool {
		rs := getResourceSet(g, key)
		return rs.Status.LastHandledReconcileAt == request && readyStatus(rs) == "True" && rs.Status.ObservedGeneration == rs.Generation
	}, 5*time.Minute, 50*time.Millisecond).Should(BeTrue(), func() string {
		rs := getResourceSet(g, key)
		return fmt.Sprintf("%+v", rs.Status.Conditions)
	})
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
