package conditiongauge_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/metrics"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/internal/testapi"
)

const finalizer = "finalizers.example.com"

// recorder is what the controllers call: Gauges, and fluxcd/pkg/runtime's Metrics, which
// Gauges replaces.
type recorder interface {
	RecordReadiness(context.Context, conditions.Getter)
	RecordReconciling(context.Context, conditions.Getter)
	RecordStalled(context.Context, conditions.Getter)
	RecordCondition(context.Context, conditions.Getter, string)
	DeleteCondition(context.Context, conditions.Getter, string)
}

func testScheme(t testing.TB) *kruntime.Scheme {
	s := kruntime.NewScheme()
	NewWithT(t).Expect(testapi.AddToScheme(s)).To(Succeed())
	return s
}

func consumer(ns, name string, conds ...metav1.Condition) *testapi.Consumer {
	c := &testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{finalizer}}}
	c.Status.Conditions = conds
	return c
}

func cond(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: "Because"}
}

// story is a lifetime of three objects, through everything the controllers record.
func story(r recorder) {
	ctx := context.Background()
	finish := func(obj conditions.Getter) {
		r.RecordReadiness(ctx, obj)
		r.RecordReconciling(ctx, obj)
		r.RecordStalled(ctx, obj)
	}
	a := consumer("ns-1", "a", cond(meta.ReadyCondition, metav1.ConditionTrue))
	b := consumer("ns-1", "b", cond(meta.ReadyCondition, metav1.ConditionFalse), cond(meta.ReconcilingCondition, metav1.ConditionTrue))
	c := consumer("ns-2", "a", cond(meta.ReadyCondition, metav1.ConditionFalse), cond(meta.StalledCondition, metav1.ConditionTrue))
	for _, o := range []conditions.Getter{a, b, c} {
		finish(o)
	}
	// b recovers; c gets a condition of its own kind, then loses it.
	b.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, metav1.ConditionTrue)}
	finish(b)
	c.Status.Conditions = append(c.Status.Conditions, cond("AutomationFailed", metav1.ConditionTrue))
	r.RecordCondition(ctx, c, "AutomationFailed")
	r.RecordCondition(ctx, c, "AutomationFailed")
	r.DeleteCondition(ctx, c, "AutomationFailed")
	r.RecordCondition(ctx, c, "NeverSet")
	// a is being deleted: its series stay while it holds the controller's finalizer.
	now := metav1.Now()
	a.DeletionTimestamp = &now
	finish(a)
	b.DeletionTimestamp = &now
	b.Finalizers = nil
	finish(b)
}

// Gauges exposes, after the same calls, exactly the series of fluxcd/pkg/runtime's recorder.
func TestGaugesExposeFluxsSeries(t *testing.T) {
	g := NewWithT(t)
	scheme := testScheme(t)

	flux := metrics.NewRecorder()
	fluxReg := prometheus.NewRegistry()
	fluxReg.MustRegister(flux.Collectors()...)
	story(&fluxMetricsRecorder{runtimectrl.NewMetrics(schemeOnly{scheme: scheme}, flux, finalizer)})

	ours := conditiongauge.New(scheme, finalizer)
	ourReg := prometheus.NewRegistry()
	ours.MustRegister(ourReg)
	story(ours)

	want := gather(t, fluxReg)
	g.Expect(want).To(ContainSubstring(`gotk_reconcile_condition{kind="Consumer",name="a",namespace="ns-1",status="True",type="Ready"} 1`))
	g.Expect(want).To(ContainSubstring(`gotk_reconcile_condition{kind="Consumer",name="a",namespace="ns-2",status="Unknown",type="NeverSet"} 1`))
	g.Expect(want).NotTo(ContainSubstring(`name="b"`), "b was deleted without the finalizer")
	g.Expect(want).NotTo(ContainSubstring(`AutomationFailed`))
	g.Expect(gather(t, ourReg)).To(Equal(want))
}

// schemeOnly is the one part of a manager that runtimectrl.NewMetrics reads.
type schemeOnly struct {
	ctrl.Manager
	scheme *kruntime.Scheme
}

func (m schemeOnly) GetScheme() *kruntime.Scheme { return m.scheme }

// fluxMetricsRecorder gives fluxcd/pkg/runtime's value-receiver Metrics the recorder interface.
type fluxMetricsRecorder struct{ runtimectrl.Metrics }

func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	families, err := reg.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var out strings.Builder
	for _, f := range families {
		if f.GetName() == "gotk_reconcile_condition" {
			_, err := expfmt.MetricFamilyToText(&out, f)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		}
	}
	return out.String()
}

// Recording the conditions of 10,000 objects takes a tenth of the memory of fluxcd/pkg/runtime's
// recorder, or less: live heap measured after a collection, which the machine's speed does not
// change.
func TestGaugesMemoryPerObject(t *testing.T) {
	const n = 10000
	scheme := testScheme(t)
	flux := metrics.NewRecorder()
	fluxBytes := heapPerObject(t, &fluxMetricsRecorder{runtimectrl.Metrics{Scheme: scheme, MetricsRecorder: flux}}, n)
	ours := heapPerObject(t, conditiongauge.New(scheme, finalizer), n)
	t.Logf("bytes per object: fluxcd/pkg/runtime %d, Gauges %d", fluxBytes, ours)
	NewWithT(t).Expect(ours * 10).To(BeNumerically("<=", fluxBytes))
}

// heapPerObject is the live heap that recording the three conditions of n objects adds, per
// object.
func heapPerObject(t *testing.T, r recorder, n int) uint64 {
	t.Helper()
	objs := make([]*testapi.Consumer, n)
	for i := range objs {
		objs[i] = consumer(fmt.Sprintf("namespace-%d", i%50), fmt.Sprintf("object-%05d", i),
			cond(meta.ReadyCondition, metav1.ConditionTrue))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, o := range objs {
		r.RecordReadiness(context.Background(), o)
		r.RecordReconciling(context.Background(), o)
		r.RecordStalled(context.Background(), o)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(objs)
	runtime.KeepAlive(r)
	return (after.HeapAlloc - before.HeapAlloc) / uint64(n)
}
