package controller

import (
	"context"
	"slices"

	"github.com/fluxcd/pkg/runtime/predicates"
	"k8s.io/apimachinery/pkg/api/equality"
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

	"github.com/sluice-gitops/sluice/shared/sharding"
)

// SetupWithManager registers the GateNotification controller and its delivery queue (a
// Runnable of the manager, run by the elected replica). A GateNotification is reconciled when its
// spec changes, when asked, and after each of its deliveries.
func (r *GateNotificationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if r.Sender == nil {
		r.Sender = &notify.Sender{}
	}
	r.results = map[types.NamespacedName]notify.Result[notify.Event]{}
	r.wake = make(chan event.GenericEvent, notify.DefaultQueueSize)
	r.queue = notify.NewQueue(notify.DefaultQueueSize, r.Sender, r.resolve, r.report,
		mgr.GetLogger().WithName("gatenotification-delivery"))
	// With shards, each replica delivers the events of the gates it owns.
	r.queue.EveryReplica = r.Shards != nil
	if err := mgr.Add(r.queue); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gatingv1.GateNotification{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicates.ReconcileRequestedPredicate{},
			lastDeliveryChanged(),
		))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(opts)
	return sharding.Complete(b, r.Shards, mgr.GetClient(), sharding.Own[gatingv1.GateNotification, gatingv1.GateNotificationList](), r)
}

// resolve lists the deliveries of a gate's event: the GateNotifications of the gate's namespace
// that forward the event and select the gate (by name, `*`, labels, or the gate's
// spec.notificationRefs), each with its Secret read. It runs on the queue's goroutine.
func (r *GateNotificationReconciler) resolve(ctx context.Context, ev notify.Event) []notify.Delivery[notify.Event] {
	list := &gatingv1.GateNotificationList{}
	if err := r.List(ctx, list, client.InNamespace(ev.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "listing GateNotifications", "namespace", ev.Namespace)
		return nil
	}
	var out []notify.Delivery[notify.Event]
	for i := range list.Items {
		gn := &list.Items[i]
		if gn.Spec.Suspend || !slices.Contains(gn.Spec.Events, gatingv1.GateEventType(ev.Event)) || !selects(gn, ev) {
			continue
		}
		t, _, err := r.target(ctx, gn)
		out = append(out, notify.Delivery[notify.Event]{Target: t, Event: ev, Err: err})
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

// lastDeliveryChanged passes the notifications whose status.lastDelivery another replica wrote
// (with shards, the replica of the gate delivers).
func lastDeliveryChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*gatingv1.GateNotification)
			n, okNew := e.ObjectNew.(*gatingv1.GateNotification)
			return okOld && okNew && !equality.Semantic.DeepEqual(o.Status.LastDelivery, n.Status.LastDelivery)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
