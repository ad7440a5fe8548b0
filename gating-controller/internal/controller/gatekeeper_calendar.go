package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// The keepers read their calendars' ConfigMaps; the manager's client reads ConfigMaps straight
// from the API server (shared/bootstrap), and both controllers watch their metadata only.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

const (
	// CalendarFailedReason: the keeper's calendar cannot be read (a missing ConfigMap or key,
	// a missing source, artifact or file, a document that does not parse or exceeds the limits).
	CalendarFailedReason = "CalendarFailed"
	// CalendarStaleReason is the Warning event of a keeper that keeps the calendar of an earlier
	// artifact of its source, as the current one cannot be downloaded.
	CalendarStaleReason = "CalendarStale"
	// gateKeeperConfigMapIndex indexes GateKeepers by the ConfigMap of their calendar.
	gateKeeperConfigMapIndex = "spec.calendar.configMapRef.name"
)

// soonest is the shortest of the positive durations, zero when there is none.
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// readerOr is r, or c when r is nil.
func readerOr(r client.Reader, c client.Reader) client.Reader {
	if r == nil {
		return c
	}
	return r
}

// calendarConfigMap is the name of the keeper's calendar ConfigMap, for the index.
func calendarConfigMap(o client.Object) []string {
	gk, ok := o.(*gatingv1.GateKeeper)
	if !ok || gk.Spec.Calendar == nil || gk.Spec.Calendar.ConfigMapRef == nil {
		return nil
	}
	return []string{gk.Spec.Calendar.ConfigMapRef.Name}
}

// keepersOfConfigMap lists the keepers whose calendar is in the ConfigMap.
func keepersOfConfigMap(ctx context.Context, c client.Reader, o client.Object) []gatingv1.GateKeeper {
	list := &gatingv1.GateKeeperList{}
	if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{gateKeeperConfigMapIndex: o.GetName()}); err != nil {
		return nil
	}
	return list.Items
}

// keepersOfCalendar maps a ConfigMap to the keepers that read it.
func (r *GateKeeperReconciler) keepersOfCalendar(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, gk := range keepersOfConfigMap(ctx, r.Client, o) {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gk)})
	}
	return reqs
}

// gatesOfCalendar maps a ConfigMap to the gates kept by keepers that read it.
func (r *GateReconciler) gatesOfCalendar(ctx context.Context, o client.Object) []reconcile.Request {
	return keptGates(keepersOfConfigMap(ctx, r.Client, o))
}

// keptGates are the gates the keepers keep, each once.
func keptGates(keepers []gatingv1.GateKeeper) []reconcile.Request {
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for _, gk := range keepers {
		if !seen[gk.Spec.Gate] {
			seen[gk.Spec.Gate] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gk.Namespace, Name: gk.Spec.Gate}})
		}
	}
	return reqs
}

// configMapMetadata is the metadata-only form of ConfigMaps the controllers watch.
func configMapMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}
