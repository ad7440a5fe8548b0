package runner

import (
	"path/filepath"
	"time"
)

// Client is the controller's side of a runner: it opens sessions on the runner's socket.
type Client struct {
	// Socket is the path of the runner's Unix socket.
	Socket string
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
	return &Session{socket: c.Socket, root: root, opts: opts}, nil
}
