// Package receiver is the gating-controller's webhook receiver: an HTTP endpoint that opens or
// closes a gate for a client holding the token of the gate's spec.receiver.secretRef, by writing
// the same request annotations as `kubectl gate open|close`, and that approves or rejects a
// gate's open request for a client holding a Kubernetes token, by creating a GateApproval with
// that token as `kubectl gate approve|reject` does (docs/receiver.md).
package gatereceiver

import (
	"context"
	"net"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// The receiver reads the token Secret a gate names. Patching gates is granted by the Gate
// controller's markers; a SelfSubjectReview (WhoAmI) needs no rule, every authenticated user may
// create one (the system:basic-user ClusterRole).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Server serves the receiver; it is a manager Runnable (mgr.Add).
type Server struct {
	// Addr is the address to listen on (":9292"); ignored when Listener is set.
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests listen on a free port).
	Listener net.Listener
	// Client reads gates (cached) and Secrets (uncached) and patches gates.
	Client client.Client
	// EventRecorder records the requests accepted on the gate.
	EventRecorder record.EventRecorder
	// APIServer is where approvals and rejections are made with the caller's own token: only its
	// host and CA are used (rest.AnonymousClientConfig), never its credentials. Nil, the
	// receiver answers /approve and /reject with 501.
	APIServer *rest.Config
	// RequestedBy is the username the API server knows the controller by: the policy
	// gate-requested-by accepts a request only in the name of the user who writes it.
	RequestedBy string
	// Limits of the replay window and the rate limit; zero values take the defaults.
	Limits Limits
	// Claims, when set, share the accepted requests with the other replicas: a request is a
	// replay on every replica (several replicas behind one Service).
	Claims *webhook.Claims

	handler http.Handler
}

// NeedLeaderElection is false: every replica may write a request, the annotations are the same
// whoever writes them.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	return webhook.Serve(ctx, s.Listener, s.Addr, s.Handler(), ctrl.LoggerFrom(ctx).WithName("receiver"))
}

// Handler returns the receiver's HTTP handler, built once.
func (s *Server) Handler() http.Handler {
	if s.handler == nil {
		s.handler = newHandler(s)
	}
	return s.handler
}
