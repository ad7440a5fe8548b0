// Package conditiongauge records the gotk_reconcile_condition gauges that Flux's dashboards
// read (kind, name, namespace, type, status; 1 for the condition's status, 0 for the two
// others), with the series and the semantics of fluxcd/pkg/runtime's controller.Metrics.
//
// fluxcd/pkg/runtime keeps a Prometheus GaugeVec: nine series of five label pairs for each
// object, about 7 KiB, the largest part of a source-controller's live heap with thousands of
// objects (source-controller/docs/storage.md, Memory). Gauges keeps each object's condition
// statuses in a few bytes and makes the series only when they are scraped.
package conditiongauge

import (
	"context"
	"slices"
	"sync"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// desc is Flux's: same name, help and labels.
var desc = prometheus.NewDesc("gotk_reconcile_condition",
	"The current condition status of a GitOps Toolkit resource reconciliation.",
	[]string{"kind", "name", "namespace", "type", "status"}, nil)

// statuses are the three series of each condition type, in Flux's order.
var statuses = [...]metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// Gauges is a prometheus.Collector of the gotk_reconcile_condition gauges. The zero value is
// not usable: New makes one. Its methods may be called concurrently.
type Gauges struct {
	scheme *runtime.Scheme
	// finalizers are the controller's own: an object being deleted that still holds one keeps
	// its series until the finalizer goes (as fluxcd/pkg/runtime's IsDelete).
	finalizers []string

	mu      sync.RWMutex
	objects map[object][]condition
}

// object names one object of one kind.
type object struct{ kind, namespace, name string }

// condition is the recorded status of one condition type of an object.
type condition struct {
	typ    string
	status metav1.ConditionStatus
}

// New returns the gauges of the objects of scheme's kinds. Register them with MustRegister.
func New(scheme *runtime.Scheme, finalizers ...string) *Gauges {
	return &Gauges{scheme: scheme, finalizers: finalizers, objects: map[object][]condition{}}
}

// Describe implements prometheus.Collector.
func (g *Gauges) Describe(ch chan<- *prometheus.Desc) { ch <- desc }

// Collect implements prometheus.Collector: the three series of each recorded condition.
func (g *Gauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for o, conds := range g.objects {
		for _, c := range conds {
			for _, s := range statuses {
				v := 0.0
				if s == c.status {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, o.kind, o.name, o.namespace, c.typ, string(s))
			}
		}
	}
}

// RecordReadiness records obj's Ready condition, or drops its series when obj is being deleted.
func (g *Gauges) RecordReadiness(ctx context.Context, obj conditions.Getter) {
	g.record(ctx, obj, meta.ReadyCondition)
}

// RecordReconciling records obj's Reconciling condition, or drops its series when obj is
// being deleted.
func (g *Gauges) RecordReconciling(ctx context.Context, obj conditions.Getter) {
	g.record(ctx, obj, meta.ReconcilingCondition)
}

// RecordStalled records obj's Stalled condition, or drops its series when obj is being deleted.
func (g *Gauges) RecordStalled(ctx context.Context, obj conditions.Getter) {
	g.record(ctx, obj, meta.StalledCondition)
}

func (g *Gauges) record(ctx context.Context, obj conditions.Getter, typ string) {
	if g.deleted(obj) {
		g.DeleteCondition(ctx, obj, typ)
		return
	}
	g.RecordCondition(ctx, obj, typ)
}

// RecordCondition records the status of obj's condition typ: Unknown when obj has none.
func (g *Gauges) RecordCondition(ctx context.Context, obj conditions.Getter, typ string) {
	o, ok := g.object(ctx, obj)
	if !ok {
		return
	}
	status := metav1.ConditionUnknown
	if c := conditions.Get(obj, typ); c != nil {
		status = c.Status
		// The constant, not the decoded object's string: the map outlives the object.
		if i := slices.Index(statuses[:], status); i >= 0 {
			status = statuses[i]
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	conds := g.objects[o]
	if i := slices.IndexFunc(conds, func(c condition) bool { return c.typ == typ }); i >= 0 {
		conds[i].status = status
		return
	}
	g.objects[o] = append(conds, condition{typ: typ, status: status})
}

// DeleteCondition drops the series of obj's condition typ.
func (g *Gauges) DeleteCondition(ctx context.Context, obj conditions.Getter, typ string) {
	o, ok := g.object(ctx, obj)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	conds := slices.DeleteFunc(g.objects[o], func(c condition) bool { return c.typ == typ })
	if len(conds) == 0 {
		delete(g.objects, o)
		return
	}
	g.objects[o] = conds
}

// deleted: obj is being deleted and holds none of the controller's finalizers.
func (g *Gauges) deleted(obj conditions.Getter) bool {
	for _, f := range g.finalizers {
		if controllerutil.ContainsFinalizer(obj, f) {
			return false
		}
	}
	return !obj.GetDeletionTimestamp().IsZero()
}

// object is obj's key, its kind from the scheme.
func (g *Gauges) object(ctx context.Context, obj conditions.Getter) (object, bool) {
	gvk, err := apiutil.GVKForObject(obj, g.scheme)
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "unable to get the kind of the object to record its condition metric")
		return object{}, false
	}
	return object{kind: gvk.Kind, namespace: obj.GetNamespace(), name: obj.GetName()}, true
}

// MustRegister registers g with reg (controller-runtime's metrics.Registry in the controllers),
// and returns g.
func (g *Gauges) MustRegister(reg prometheus.Registerer) *Gauges {
	reg.MustRegister(g)
	return g
}
