package fluxreceiver

import (
	"context"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// DefaultMaxBodySize is the largest body the receiver reads unless --webhook-receiver-max-body-size
// says otherwise: 1 MiB, enough for a push of many commits, far below what a flood would need.
const DefaultMaxBodySize = 1 << 20

// Limits bound what a caller can make the receiver do (webhook.Bounds); zero values take the
// defaults: a body of DefaultMaxBodySize, one request every 6s per Receiver and 10 at once
// (only authenticated requests that would ask objects to reconcile count), one failed
// authentication every 6s per source address and 10 at once, 10000 addresses remembered, and
// deliveries remembered 10m, 16384 at most (when they are all in the window, new deliveries get
// 429).
type Limits webhook.Bounds

func (l Limits) withDefaults() Limits {
	defaults := Limits{MaxBody: DefaultMaxBodySize, RateInterval: 6 * time.Second, Burst: 10,
		FailureInterval: 6 * time.Second, FailureBurst: 10, MaxSources: 10000,
		ReplayWindow: 10 * time.Minute, MaxRemembered: 16384}
	if l.MaxBody <= 0 {
		l.MaxBody = defaults.MaxBody
	}
	if l.RateInterval <= 0 {
		l.RateInterval = defaults.RateInterval
	}
	if l.Burst <= 0 {
		l.Burst = defaults.Burst
	}
	if l.FailureInterval <= 0 {
		l.FailureInterval = defaults.FailureInterval
	}
	if l.FailureBurst <= 0 {
		l.FailureBurst = defaults.FailureBurst
	}
	if l.MaxSources <= 0 {
		l.MaxSources = defaults.MaxSources
	}
	if l.ReplayWindow <= 0 {
		l.ReplayWindow = defaults.ReplayWindow
	}
	if l.MaxRemembered <= 0 {
		l.MaxRemembered = defaults.MaxRemembered
	}
	return l
}

// Server serves the webhook paths of Receivers; it is a manager Runnable (mgr.Add), and needs
// the index that ReceiverReconciler.SetupWithManager registers.
type Server struct {
	// Addr is the address to listen on (":9293"); ignored when Listener is set.
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests listen on a free port).
	Listener net.Listener
	// Client finds Receivers by path (cached, indexed), reads Secrets and the objects a Receiver
	// names (uncached), and patches those objects.
	Client client.Client
	// EventRecorder records on the Receiver what each accepted request asked.
	EventRecorder record.EventRecorder
	// AllowCrossNamespaceRefs lets spec.resources name objects of other namespaces.
	AllowCrossNamespaceRefs bool
	// Limits of the body, the rates and the replay memory.
	Limits Limits
	// Claims, when set, share the accepted deliveries with the other replicas.
	Claims *webhook.Claims

	handler http.Handler
}

// NeedLeaderElection is false: every replica serves, the annotations are the same whoever
// writes them.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	return webhook.Serve(ctx, s.Listener, s.Addr, s.Handler(), ctrl.LoggerFrom(ctx).WithName(logName))
}

// Handler returns the receiver's HTTP handler, built once.
func (s *Server) Handler() http.Handler {
	if s.handler == nil {
		s.handler = newHandler(s)
	}
	return s.handler
}
