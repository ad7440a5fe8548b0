package runner

import (
	"fmt"
	"net"
	"path/filepath"
	"time"
)

// Client is the controller's side of a runner: it opens sessions on the runner's socket.
type Client struct {
	// Socket is the path of the runner's Unix socket.
	Socket string
	// RunnerUID is the user the runner runs as: a socket served by anyone else (a command that
	// took the socket's place) gets nothing, not even the tree.
	RunnerUID int
	// RunnerPID, when set, is the process the socket must be served by (a local runner).
	RunnerPID int
}

// Options configure the commands of a session.
type Options struct {
	// Path is the PATH the commands see (fluxyaml.DefaultPath when empty).
	Path string
	// Env are the user's variables (spec.env).
	Env map[string]string
	// DefaultTimeout applies to commands without a timeout of their own
	// (fluxyaml.DefaultTimeout when zero).
	DefaultTimeout time.Duration
	// MaxOutput caps each command's standard output (fluxyaml.DefaultMaxOutput when zero).
	MaxOutput int64
	// Track makes Session.Changes available: the runner records the tree as uploaded.
	Track bool
}

// Session returns a session on a private copy of the tree at dir: a fluxyaml.Executor whose
// commands run in the runner. It connects on first use, so a session that runs nothing costs
// nothing. The caller must Close it.
func (c *Client) Session(dir string, opts Options) (*Session, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return &Session{client: *c, root: root, opts: opts}, nil
}

// checkPeer refuses a socket that is not served by the runner.
func (c *Client) checkPeer(conn net.Conn) error {
	cred, err := peerCred(conn)
	if err != nil {
		return fmt.Errorf("connecting to the runner: %w", err)
	}
	if int(cred.Uid) != c.RunnerUID || c.RunnerPID != 0 && int(cred.Pid) != c.RunnerPID {
		return fmt.Errorf("connecting to the runner: the socket %s is served by uid %d (pid %d), not by the runner (uid %d): refused, nothing was sent",
			c.Socket, cred.Uid, cred.Pid, c.RunnerUID)
	}
	return nil
}
