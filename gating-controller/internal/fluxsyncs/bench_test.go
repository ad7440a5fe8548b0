package fluxsyncs

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// heldKustomizations is the fleet of BenchmarkReleaseOnOpen: the figure is 200
// Kustomizations on one gate, all released within 5 s of its opening.
const heldKustomizations = 200

// BenchmarkReleaseOnOpen measures the time from a gate's opening (the Gate's spec changed, as
// `kubectl gate open` does) to every one of 200 Kustomizations held behind it released: spec.suspend
// lifted, a reconcile requested. The controller runs with the deployed defaults (4 concurrent
// reconciles, the client limits of shared/bootstrap) against the real API server.
//
//	go test -run '^$' -bench ReleaseOnOpen -benchtime 3x ./internal/fluxsyncs/
func BenchmarkReleaseOnOpen(b *testing.B) {
	g := NewWithT(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b)
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := startManager(ctx, ns); err != nil {
			b.Fatal(err)
		}
		createGate(b, ns, "freeze", gatingv1.GateClosed)
		for j := range heldKustomizations {
			createObject(b, kustomization, ns, fmt.Sprintf("app-%03d", j), "freeze", false)
		}
		g.Eventually(func() int { return countHeld(g, ns) }, 2*time.Minute, 100*time.Millisecond).Should(Equal(heldKustomizations))

		gate := &gatingv1.Gate{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "freeze"}, gate)).To(Succeed())
		patch := client.MergeFrom(gate.DeepCopy())
		gate.Spec.Default = gatingv1.GateOpened
		b.StartTimer()
		start := time.Now()
		g.Expect(k8s.Patch(ctx, gate, patch)).To(Succeed())
		for countHeld(g, ns) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/release-200")
		b.StopTimer()
		cancel()
	}
}

// countHeld counts the Kustomizations of ns that are still suspended for their gates.
func countHeld(g Gomega, ns string) int {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(kustomization.GVK.GroupVersion().WithKind("KustomizationList"))
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, item := range list.Items {
		if item.GetAnnotations()[gatesapi.SuspendedAnnotation] == "true" {
			n++
		}
	}
	return n
}
