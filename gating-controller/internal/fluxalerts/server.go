package fluxalerts

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// DefaultMaxBodySize is the largest event the receiver reads: 256 KiB. Flux's controllers post
// events of a few KiB; a larger body is refused before it is read whole.
const DefaultMaxBodySize = 256 << 10

// Server is the event receiver (--event-receiver-addr): controllers post their events to it in
// Flux's event format, as Flux's controllers post them to the notification-controller. It is a
// manager Runnable, served by every replica.
type Server struct {
	// Addr is the address to listen on (":9294"); ignored when Listener is set.
	Addr string
	// Listener, when set, is used instead of listening on Addr.
	Listener net.Listener
	// MaxBody bounds the body; 0 is DefaultMaxBodySize.
	MaxBody int64
	// Enqueue hands an event over to the deliveries; false when it was dropped.
	Enqueue func(eventv1.Event) bool
}

// NeedLeaderElection is false: every replica receives, as the Service routes events to any.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	return webhook.Serve(ctx, s.Listener, s.Addr, s, ctrl.LoggerFrom(ctx).WithName("event-receiver"))
}

// ServeHTTP takes one event: 202 once queued, 400 for what is not an event, 413 for a body past
// the bound (refused from its Content-Length before anything is read), 503 when the queue is full.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		webhook.Reply(w, http.StatusMethodNotAllowed, "events are posted")
		return
	}
	limit := s.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBodySize
	}
	if r.ContentLength > limit {
		webhook.Reply(w, http.StatusRequestEntityTooLarge, "the body is too large")
		return
	}
	body, ok := webhook.ReadBody(w, r, limit)
	if !ok {
		return
	}
	var ev eventv1.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		webhook.Reply(w, http.StatusBadRequest, "the body is not an event of Flux's format")
		return
	}
	if err := validate(ev); err != nil {
		webhook.Reply(w, http.StatusBadRequest, err.Error())
		return
	}
	if ev.Severity == eventv1.EventSeverityTrace {
		w.WriteHeader(http.StatusAccepted) // traces are not sent, as with Flux
		return
	}
	if !s.Enqueue(ev) {
		webhook.Reply(w, http.StatusServiceUnavailable, "too many events are waiting: retry later")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// validate refuses an event that names no object, or has no reason, message or known severity.
func validate(ev eventv1.Event) error {
	o := ev.InvolvedObject
	switch {
	case o.Kind == "" || o.Name == "" || o.Namespace == "":
		return errors.New("the event names no object: involvedObject needs kind, name and namespace")
	case ev.Reason == "" || ev.Message == "":
		return errors.New("the event has no reason or message")
	case ev.Severity != eventv1.EventSeverityInfo && ev.Severity != eventv1.EventSeverityError && ev.Severity != eventv1.EventSeverityTrace:
		return errors.New("the event's severity is not info, error or trace")
	}
	return nil
}
