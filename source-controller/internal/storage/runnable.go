package storage

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Server runs the artifact HTTP server as a manager runnable. It runs on every replica, not only
// the leader: any replica with the volume can serve downloads. Only the leader reconciles, so
// with a volume per replica only the leader's holds artifacts: --leader-pod-label (package
// leaderpod) marks its pod for the Service to select.
type Server struct {
	Addr    string
	Storage *Storage

	listening atomic.Bool
}

// errNotListening is the readiness failure until the server accepts connections.
var errNotListening = errors.New("the artifact server is not listening")

// Ready is a readiness check (healthz.Checker): a replica is ready only once it serves artifacts,
// since consumers download from whichever replica the Service picks.
func (s *Server) Ready(*http.Request) error {
	if !s.listening.Load() {
		return errNotListening
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (*Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	srv := newHTTPServer(s.Storage.Handler())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The listener accepts connections from here on; Serve takes them as soon as it runs.
	s.listening.Store(true)
	defer s.listening.Store(false)
	ctrl.Log.WithName("storage").Info("serving artifacts", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// newHTTPServer is the artifact server: requests have no body, so reading them is quick; a
// response may be a large artifact on a slow link, so writing one gets minutes; idle keep-alive
// connections are closed, so that clients that went away hold nothing.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      15 * time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
}
