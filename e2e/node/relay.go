package node

import (
	"io"
	"net"
	"os"
	"path/filepath"
)

// apiRelay serves the API server on a unix socket, for pods: the API server listens on the
// host's loopback, which a pod's network namespace does not reach, and a socket in a hostPath
// volume is no network listener. internal/apirelay is its other end, in the pod.
type apiRelay struct {
	listener net.Listener
}

// startAPIRelay relays connections to dir/apiserver.sock to the TCP address apiserver.
func startAPIRelay(dir, apiserver string) (*apiRelay, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "apiserver.sock")
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	// The pods' users are not root.
	if err := os.Chmod(socket, 0o666); err != nil {
		l.Close()
		return nil, err
	}
	go relay(l, apiserver)
	return &apiRelay{listener: l}, nil
}

// stop closes the socket; relayed connections end when the pods' processes are killed.
func (r *apiRelay) stop() {
	if r != nil {
		r.listener.Close()
	}
}

// relay forwards every connection accepted on l to the TCP address target, both ways, until l
// is closed; a connection ends when either side closes.
func relay(l net.Listener, target string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			s, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer s.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
			<-done
		}()
	}
}
