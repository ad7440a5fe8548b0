package fluxalerts

import (
	"context"
	"strings"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=alerts;providers,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io;kustomize.toolkit.fluxcd.io;helm.toolkit.fluxcd.io;image.toolkit.fluxcd.io;fluxcd.controlplane.io;generator.toolkit.fluxcd.io;gating.toolkit.fluxcd.io,resources=*,verbs=get

// Setup adds the event receiver on addr and its delivery queue to the manager: every replica
// receives events and delivers those it received.
func Setup(mgr ctrl.Manager, addr string, r *Resolver) error {
	q := notify.NewQueue(notify.DefaultQueueSize, r.Sender, r.Resolve, func(res notify.Result[Message]) { r.report(res) },
		mgr.GetLogger().WithName("alert-delivery"))
	q.EveryReplica = true
	if err := mgr.Add(q); err != nil {
		return err
	}
	return mgr.Add(&Server{Addr: addr, Enqueue: func(ev eventv1.Event) bool { return q.Enqueue(Message{Event: ev}) }})
}

// report records a failed delivery as a Warning event on the Alert; the message names the
// Provider and the error, never its address or token.
func (r *Resolver) report(res notify.Result[Message]) {
	if res.Err == nil {
		return
	}
	ns, name, _ := strings.Cut(res.Event.Alert, "/")
	alert := &notificationv1beta3.Alert{}
	if err := r.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, alert); err != nil {
		return
	}
	_, provider, _ := strings.Cut(res.Key, "/")
	o := res.Event.Event.InvolvedObject
	r.EventRecorder.Eventf(alert, corev1.EventTypeWarning, DeliveryFailedReason, "event %s of %s/%s not delivered to Provider '%s': %s",
		res.Event.Event.Reason, o.Kind, o.Name, provider, res.Err)
}
