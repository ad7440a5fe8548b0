package controller

import (
	"context"
	"slices"

	"github.com/fluxcd/pkg/runtime/predicates"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// SetupWithManager registers the GateNotification controller and its delivery queue (a
// Runnable of the manager, run by the elected replica). A GateNotification is reconciled when its
// spec changes, when asked, and after each of its deliveries.
func (r *GateNotificationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if r.Sender == nil {
		r.Sender = &notify.Sender{}
	}
	r.results = map[types.NamespacedName]notify.Result{}
	r.wake = make(chan event.GenericEvent, notify.DefaultQueueSize)
	r.queue = notify.NewQueue(notify.DefaultQueueSize, r.Sender, r.resolve, r.report,
		mgr.GetLogger().WithName("gatenotification-delivery"))
	if err := mgr.Add(r.queue); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&gatingv1.GateNotification{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
		))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(opts).
		Complete(r)
}

// resolve lists the deliveries of a gate's event: the GateNotifications of the gate's namespace
// that forward the event and select the gate (by name, `*`, labels, or the gate's
// spec.notificationRefs), each with its Secret read. It runs on the queue's goroutine.
func (r *GateNotificationReconciler) resolve(ctx context.Context, ev notify.Event) []notify.Delivery {
	list := &gatingv1.GateNotificationList{}
	if err := r.List(ctx, list, client.InNamespace(ev.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "listing GateNotifications", "namespace", ev.Namespace)
		return nil
	}
	var out []notify.Delivery
	for i := range list.Items {
		gn := &list.Items[i]
		if gn.Spec.Suspend || !slices.Contains(gn.Spec.Events, gatingv1.GateEventType(ev.Event)) || !selects(gn, ev) {
			continue
		}
		t, _, err := r.target(ctx, gn)
		out = append(out, notify.Delivery{Target: t, Event: ev, Err: err})
	}
	return out
}

// selects tells whether the notification reports on the event's gate.
func selects(gn *gatingv1.GateNotification, ev notify.Event) bool {
	if slices.Contains(ev.NotificationRefs, gn.Name) || slices.Contains(gn.Spec.Gates, "*") || slices.Contains(gn.Spec.Gates, ev.Gate) {
		return true
	}
	if gn.Spec.GateSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(gn.Spec.GateSelector)
	return err == nil && sel.Matches(labels.Set(ev.Labels))
}
