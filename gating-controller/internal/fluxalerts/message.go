package fluxalerts

import (
	"encoding/json"
	"fmt"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
)

// Message is an event on its way to one Provider: Flux's event, with the metadata its Alert adds.
type Message struct {
	Event eventv1.Event
	// Alert names the Alert that sends it: namespace/name.
	Alert string
}

// Body is what a Provider of the type receives. generic and generic-hmac get Flux's event itself,
// as Flux's notification-controller posts it (generic-hmac signed by the sender).
func (m Message) Body(typ string) ([]byte, error) {
	switch typ {
	case notificationv1beta3.GenericProvider, notificationv1beta3.GenericHMACProvider:
		return json.Marshal(m.Event)
	default:
		return nil, fmt.Errorf("the Provider type %q is not sent by the gating-controller", typ)
	}
}

// LogValues name the event's object, its reason and the Alert.
func (m Message) LogValues() []any {
	o := m.Event.InvolvedObject
	return []any{"alert", m.Alert, "object", o.Kind + "/" + o.Namespace + "/" + o.Name, "reason", m.Event.Reason}
}
