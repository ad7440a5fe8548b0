package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Client is the controller's side of a runner: it opens sessions on the runner's socket, or,
// with a Dialer, each in a process of its own elsewhere (a pod: internal/sessionpod).
type Client struct {
	// Dialer, when set, starts the process of each session and connects to it; Socket,
	// RunnerUID and RunnerPID are then unused.
	Dialer Dialer
	// Socket is the path of the runner's Unix socket.
	Socket string
	// RunnerUID is the user the runner runs as: a socket served by anyone else (a command that
	// took the socket's place) gets nothing, not even the tree.
	RunnerUID int
	// RunnerPID, when set, is the process the socket must be served by (a local runner).
	RunnerPID int
	// AllowEgress lets sessions ask for the network (Options.Egress, --session-egress); a
	// session that asks without it is refused with ErrEgressNotAllowed.
	AllowEgress bool
}

// ErrEgressNotAllowed refuses a session that asks for the network where the controller allows
// none.
var ErrEgressNotAllowed = errors.New("spec.egress asks for the network, which the manifest-generator's --session-egress=false allows no command")

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
	// Egress lets the commands reach the network (spec.egress); without it the session's
	// process and commands may open no socket but a Unix one.
	Egress bool
	// Owner is the object the session works for. A Dialer starts the session's process in
	// its namespace, owned by it.
	Owner Owner
}

// Owner names the object a session works for.
type Owner struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// Dialer starts the process of one session, which speaks the session protocol on the
// connection it returns (`manifest-generator runner session` on its standard input and
// output), and ends it when the connection is closed. The connection's Close must be safe to
// call more than once.
type Dialer interface {
	Dial(ctx context.Context, opts Options) (io.ReadWriteCloser, error)
}

// Ender is a connection that can tell why its far end went away (a pod killed for its memory),
// once reading or writing failed.
type Ender interface {
	EndReason() string
}

// dial connects a new session: through the Dialer, or to the runner's socket, whose server
// must be the runner.
func (c *Client) dial(ctx context.Context, opts Options) (io.ReadWriteCloser, error) {
	if c.Dialer != nil {
		return c.Dialer.Dial(ctx, opts)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return nil, fmt.Errorf("connecting to the runner: %w", err)
	}
	if err := c.checkPeer(conn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// wentAway is the error of a session whose connection failed with err.
func (c *Client) wentAway(conn io.ReadWriteCloser, err error) error {
	if e, ok := conn.(Ender); ok {
		if reason := e.EndReason(); reason != "" {
			return fmt.Errorf("the session ended: %s", reason)
		}
	}
	return fmt.Errorf("the runner went away: %w", err)
}

// Session returns a session on a private copy of the tree at dir: a fluxyaml.Executor whose
// commands run in the runner. It connects on first use, so a session that runs nothing costs
// nothing. The caller must Close it.
func (c *Client) Session(dir string, opts Options) (*Session, error) {
	if opts.Egress && !c.AllowEgress {
		return nil, ErrEgressNotAllowed
	}
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

// OwnerOf is the Owner of obj, of the given API version and kind.
func OwnerOf(apiVersion, kind string, obj metav1.Object) Owner {
	return Owner{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID())}
}
