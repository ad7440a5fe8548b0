package runner

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerCred returns the credentials of the process at the other end of a Unix socket connection
// (SO_PEERCRED). The kernel records them when the peer connected (a client) or listened (a
// server), so neither a command nor anyone else can forge them: each side checks who answers
// before it sends or takes anything.
func peerCred(conn net.Conn) (*unix.Ucred, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a Unix socket connection: %T", conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("reading the peer's credentials: %w", credErr)
	}
	return cred, nil
}
