package storage

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The server is ready only while it accepts connections: not before Start, not after it stops.
func TestServerReadyOnlyWhileListening(t *testing.T) {
	g := NewWithT(t)
	// A free port, released for the server to take.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	g.Expect(ln.Close()).To(Succeed())

	s := &Server{Addr: addr, Storage: newTestStorage(t, Options{})}
	g.Expect(s.Ready(nil)).To(MatchError(errNotListening))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	g.Eventually(func() error { return s.Ready(nil) }, 10*time.Second).Should(Succeed())
	resp, err := http.Get("http://" + addr + "/missing.tar.gz")
	g.Expect(err).NotTo(HaveOccurred(), "ready means connections are accepted")
	g.Expect(resp.Body.Close()).To(Succeed())

	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
	g.Expect(s.Ready(nil)).To(MatchError(errNotListening))
}
