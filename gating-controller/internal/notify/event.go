package notify

import "time"

// Event is a change of a gate, as the generic payload carries it (docs/notifications.md).
type Event struct {
	// Gate and Namespace name the gate.
	Gate      string `json:"gate"`
	Namespace string `json:"namespace"`
	// Event is Opened, Closed or KeeperFailed (ApprovalPending, Approved and Rejected come with
	// approvals).
	Event string `json:"event"`
	// State is the gate's state after the event, PreviousState before it: opened or closed.
	State         string `json:"state"`
	PreviousState string `json:"previousState,omitempty"`
	// Reason is the reason given with the request, or the GateKeeper's error for KeeperFailed.
	Reason string `json:"reason,omitempty"`
	// Message is the sentence the Gate's own event says.
	Message string `json:"message"`
	// Cause is what put the gate in its state: `default`, `request` or `gatekeeper/<name>`.
	Cause string `json:"cause"`
	// GateKeeper names the keeper of a `gatekeeper/<name>` cause, or the broken keeper.
	GateKeeper string `json:"gateKeeper,omitempty"`
	// RequestedBy names who made the request of a `request` cause.
	RequestedBy string `json:"requestedBy,omitempty"`
	// Until is when the gate changes state next by itself, when known.
	Until *time.Time `json:"until,omitempty"`
	// Time of the event.
	Time time.Time `json:"time"`
	// URL opens the gate in the dashboard (--dashboard-url); empty when none is configured.
	URL string `json:"url,omitempty"`

	// Labels and NotificationRefs of the gate select the GateNotifications the event goes to;
	// they are not sent.
	Labels           map[string]string `json:"-"`
	NotificationRefs []string          `json:"-"`
}

// Message is what a Queue delivers: the change of a gate (Event), or an event of Flux's format
// that an Alert sends (internal/fluxalerts).
type Message interface {
	// Body is what is posted to an endpoint of the type.
	Body(typ string) ([]byte, error)
	// LogValues name the message in the log lines of its deliveries.
	LogValues() []any
}

// Body is what is posted for the gate's change to an endpoint of the type (see the function Body).
func (ev Event) Body(typ string) ([]byte, error) { return Body(typ, ev) }

// LogValues name the gate and the change.
func (ev Event) LogValues() []any {
	return []any{"gate", ev.Namespace + "/" + ev.Gate, "event", ev.Event}
}

// DashboardLink is the URL of a gate in the dashboard served at base (`kubectl gate ui` as
// deployed): the page, with the gate named in the fragment. Empty base, no link.
func DashboardLink(base, namespace, gate string) string {
	if base == "" {
		return ""
	}
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return base + "/#" + namespace + "/" + gate
}
