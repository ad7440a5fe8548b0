package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/secrets"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// Reasons of a GateNotification's Ready condition and events (docs/notifications.md).
const (
	// DeliveryFailedReason: the last delivery failed after its retries (also a Warning event).
	DeliveryFailedReason = "DeliveryFailed"
	// SecretNotFoundReason: the Secret of spec.secretRef cannot be read.
	SecretNotFoundReason = "SecretNotFound"
	// InvalidSecretReason: the Secret lacks the address or the token the type needs.
	InvalidSecretReason = "InvalidSecret"
	// AddressRefusedReason: the address is not http(s), or one the controller may not post to.
	AddressRefusedReason = "AddressRefused"
)

// GateNotificationReconciler keeps the status of GateNotifications and owns the queue that
// delivers the events of gates to them (internal/notify). The Gate reconciler hands events over
// through Enqueue, which never blocks.
type GateNotificationReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards  *sharding.Shards
	Metrics *conditiongauge.Gauges
	// Sender delivers; its AddressPolicy is --notification-allowed-cidrs and --service-cidr.
	Sender *notify.Sender
	// DashboardURL is the base URL of `kubectl gate ui` as deployed (--dashboard-url); empty,
	// events carry no link.
	DashboardURL string
	// RequeueDependency is how soon a notification whose Secret is missing is looked at again.
	RequeueDependency time.Duration

	queue *notify.Queue[notify.Event]
	wake  chan event.GenericEvent
	mu    sync.Mutex
	// results are the last delivery of each notification, until its status says so.
	results map[types.NamespacedName]notify.Result[notify.Event]
}

// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gatenotifications,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gatenotifications/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

func (r *GateNotificationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	gn := &gatingv1.GateNotification{}
	if err := r.Get(ctx, req.NamespacedName, gn); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.results, req.NamespacedName)
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rec := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: ControllerName}.Begin(ctx, gn, status.Fields{
		ObservedGeneration: &gn.Status.ObservedGeneration, LastHandledReconcileAt: &gn.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	if done, err := rec.Preamble(status.Preamble{Suspended: gn.Spec.Suspend, SuspendedMessage: "the GateNotification is suspended: events are not forwarded"}); done {
		return ctrl.Result{}, err
	}

	if _, reason, err := r.target(ctx, gn); err != nil {
		conditions.MarkFalse(gn, meta.ReadyCondition, reason, "%s", err)
		return ctrl.Result{RequeueAfter: r.requeueDependency()}, nil
	}

	r.mu.Lock()
	res, ok := r.results[req.NamespacedName]
	r.mu.Unlock()
	last := gn.Status.LastDelivery
	if ok && (last == nil || !res.Time.Before(last.Time.Time)) {
		last = deliveryOf(res)
		gn.Status.LastDelivery = last
	}
	switch {
	case last == nil:
		conditions.MarkTrue(gn, meta.ReadyCondition, meta.SucceededReason, "Ready to deliver %s events", gn.Spec.Type)
	case last.Result == gatingv1.DeliveryFailed && ok && res.Err != nil:
		conditions.MarkFalse(gn, meta.ReadyCondition, DeliveryFailedReason, "%s", deliveryFailure(res))
	case last.Result == gatingv1.DeliveryFailed:
		// After a restart the error is gone; the status still says which delivery failed.
		if c := conditions.Get(gn, meta.ReadyCondition); c == nil || c.Reason != DeliveryFailedReason {
			conditions.MarkFalse(gn, meta.ReadyCondition, DeliveryFailedReason, "%s event of gate '%s' not delivered", last.Event, last.Gate)
		}
	default:
		conditions.MarkTrue(gn, meta.ReadyCondition, meta.SucceededReason, "Delivered the %s event of gate '%s'", last.Event, last.Gate)
	}
	return ctrl.Result{}, nil
}

// deliveryFailure is the message of the condition and the event of a failed delivery: the event,
// the gate and what the endpoint answered (no URL, no token).
func deliveryFailure(res notify.Result[notify.Event]) string {
	return fmt.Sprintf("%s event of gate '%s' not delivered: %s", res.Event.Event, res.Event.Gate, res.Err)
}

// target reads the notification's Secret and checks its address: the endpoint of a delivery, or
// why there is none, with the reason of the Ready condition. Its errors quote no secret value.
func (r *GateNotificationReconciler) target(ctx context.Context, gn *gatingv1.GateNotification) (notify.Target, string, error) {
	t := notify.Target{Key: gn.Namespace + "/" + gn.Name, Type: string(gn.Spec.Type), URL: gn.Spec.Address, Timeout: notify.DefaultTimeout}
	if gn.Spec.Timeout != nil && gn.Spec.Timeout.Duration > 0 {
		t.Timeout = gn.Spec.Timeout.Duration
	}
	if gn.Spec.SecretRef != nil {
		key := client.ObjectKey{Namespace: gn.Namespace, Name: gn.Spec.SecretRef.Name}
		data, err := secrets.Data(ctx, r.Client, key.Namespace, key.Name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return t, SecretNotFoundReason, fmt.Errorf("Secret '%s' not found", key.Name)
			}
			return t, SecretNotFoundReason, fmt.Errorf("reading Secret '%s': %s", key.Name, apierrors.ReasonForError(err))
		}
		if a := data[gatingv1.NotificationAddressKey]; len(a) > 0 {
			t.URL = string(a)
		}
		t.Token = data[gatingv1.NotificationTokenKey]
		if t.URL == "" {
			return t, InvalidSecretReason, fmt.Errorf("Secret '%s' has no '%s' key and spec.address is not set", key.Name, gatingv1.NotificationAddressKey)
		}
		if gn.Spec.Type == gatingv1.NotificationGenericHMAC && len(t.Token) == 0 {
			return t, InvalidSecretReason, fmt.Errorf("Secret '%s' has no '%s' key: generic-hmac signs with it", key.Name, gatingv1.NotificationTokenKey)
		}
	}
	if _, err := r.Sender.ParseAddress(t.URL); err != nil {
		return t, AddressRefusedReason, err
	}
	return t, "", nil
}

func (r *GateNotificationReconciler) requeueDependency() time.Duration {
	if r.RequeueDependency > 0 {
		return r.RequeueDependency
	}
	return 30 * time.Second
}

// Enqueue hands a gate's event to the delivery queue without waiting (the Gate reconciler's
// Notifier); a nil reconciler takes nothing.
func (r *GateNotificationReconciler) Enqueue(ev notify.Event) {
	if r == nil || r.queue == nil {
		return
	}
	ev.URL = notify.DashboardLink(r.DashboardURL, ev.Namespace, ev.Gate)
	r.queue.Enqueue(ev)
}

// report takes the result of a delivery: a failure is a Warning event at once; the status
// follows in a reconcile.
func (r *GateNotificationReconciler) report(res notify.Result[notify.Event]) {
	ns, name, _ := cutKey(res.Key)
	key := types.NamespacedName{Namespace: ns, Name: name}
	gn := &gatingv1.GateNotification{}
	if err := r.Get(context.Background(), key, gn); err != nil {
		return
	}
	if res.Err != nil {
		r.EventRecorder.Event(gn, corev1.EventTypeWarning, DeliveryFailedReason, deliveryFailure(res))
	}
	if r.Shards != nil && !r.Shards.Owns(key.String()) {
		// The gate's replica delivered, and another owns the notification: it hands the result
		// over in the status, which its owner's watch picks up.
		r.recordDelivery(gn, res)
		return
	}
	r.mu.Lock()
	r.results[key] = res
	r.mu.Unlock()
	r.wake <- event.GenericEvent{Object: gn}
}

// recordDelivery writes a delivery's result into the notification's status.lastDelivery.
func (r *GateNotificationReconciler) recordDelivery(gn *gatingv1.GateNotification, res notify.Result[notify.Event]) {
	if last := gn.Status.LastDelivery; last != nil && res.Time.Before(last.Time.Time) {
		return
	}
	before := gn.DeepCopy()
	gn.Status.LastDelivery = deliveryOf(res)
	if err := r.Status().Patch(context.Background(), gn, client.MergeFrom(before), client.FieldOwner(ControllerName)); err != nil {
		ctrl.Log.WithName(ControllerName).Info("recording a delivery in the GateNotification's status failed", "notification", res.Key, "error", err.Error())
	}
}

// deliveryOf is the status of a delivery's result.
func deliveryOf(res notify.Result[notify.Event]) *gatingv1.GateNotificationDelivery {
	d := &gatingv1.GateNotificationDelivery{Time: metav1.NewTime(res.Time), Event: gatingv1.GateEventType(res.Event.Event),
		Gate: res.Event.Gate, Result: gatingv1.DeliverySucceeded, Attempts: res.Attempts}
	if res.Err != nil {
		d.Result = gatingv1.DeliveryFailed
	}
	return d
}

func cutKey(key string) (string, string, bool) { return strings.Cut(key, "/") }
