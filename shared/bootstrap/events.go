package bootstrap

import (
	"github.com/fluxcd/pkg/runtime/events"
	ctrl "sigs.k8s.io/controller-runtime"
)

// NewEventRecorder is the controller's event recorder: Kubernetes events, and with --events-addr
// the same events posted in Flux's event format (eventv1.Event, with the object's revision and
// token metadata), as Flux's controllers post them.
func (o *Options) NewEventRecorder(mgr ctrl.Manager, controllerName string) (*events.Recorder, error) {
	return events.NewRecorder(mgr, ctrl.Log, o.EventsAddr, controllerName)
}
