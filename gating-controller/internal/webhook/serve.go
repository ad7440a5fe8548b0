package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
)

// Serve serves h on ln, or on a listener of addr when ln is nil, until ctx is done, then shuts
// down gracefully. A connection has 10 seconds to send its headers (at most 16 KiB) and 30 seconds
// for the whole request, so that slow clients cannot hold connections open; a body h does not
// read is not read (EndUnreadBodies).
func Serve(ctx context.Context, ln net.Listener, addr string, h http.Handler, log logr.Logger) error {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler:           EndUnreadBodies(h),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	log.Info("serving the webhook receiver", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
