package node

import (
	"context"
	"net"
	"syscall"
)

// serviceRelay makes the API server, which listens on the host's loopback only, reachable from
// pods: it listens on the pods' bridge address (the gateway of the pod range), which the API
// server advertises as the kubernetes Service's endpoint, and relays each connection to the API
// server. TLS passes through: pods see the API server's own certificate. The bridge appears with
// the first pod, so the socket is bound with IP_FREEBIND before the address exists; it listens on
// no other address of the host.
type serviceRelay struct {
	listener net.Listener
}

// startServiceRelay relays connections to listen (the bridge's address) to target.
func startServiceRelay(listen, target string) (*serviceRelay, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_FREEBIND, 1)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	l, err := lc.Listen(context.Background(), "tcp4", listen)
	if err != nil {
		return nil, err
	}
	go relay(l, target)
	return &serviceRelay{listener: l}, nil
}

// stop closes the listener; relayed connections end when the pods' processes are killed.
func (r *serviceRelay) stop() {
	if r != nil {
		r.listener.Close()
	}
}
