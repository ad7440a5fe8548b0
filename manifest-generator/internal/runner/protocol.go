package runner

import "time"

// The session protocol: gob-encoded requests and responses on the connection, strictly one
// response per request, except for opTree, which the client sends as a stream of chunks ended
// by an empty one and which gets one response at the end.
const (
	opOpen    = "open"
	opTree    = "tree"
	opRun     = "run"
	opWrite   = "write"
	opChanges = "changes"
)

// request is what the controller sends.
type request struct {
	Op    string
	Open  *openRequest
	Chunk []byte
	Run   *runRequest
	Write *writeRequest
}

// openRequest configures the session's commands; it is the first request.
type openRequest struct {
	// Path is the PATH of the commands.
	Path string
	// Env are the user's variables (spec.env).
	Env map[string]string
	// DefaultTimeout applies to commands without their own timeout.
	DefaultTimeout time.Duration
	// MaxOutput caps the standard output of each command.
	MaxOutput int64
	// Track records the uploaded tree, so that opChanges can tell what commands changed.
	Track bool
	// Egress lets the commands open network connections; without it they may open no socket
	// but a Unix one (denyNetwork).
	Egress bool
}

// runRequest runs one command.
type runRequest struct {
	Command string
	// Timeout is the command's own timeout, 0 for the session's default.
	Timeout time.Duration
	// Dir is the working directory, slash-separated and relative to the tree's root.
	Dir string
	Env map[string]string
}

// writeRequest writes a file of the tree (the controller's own edit, e.g. the patch file).
type writeRequest struct {
	Path string
	Data []byte
	Mode uint32
}

// response is what the runner answers.
type response struct {
	// Err is a failure of the runner or of the request, not of a command.
	Err     string
	Run     *runResponse
	Changes []Change
	// OverLimit is set, with Err, when the changes are more than the runner sends back.
	OverLimit *ChangeLimitError
}

// runResponse is the outcome of a command.
type runResponse struct {
	Stdout   []byte
	Stderr   string
	ExitCode int
	// Failed is set when the command did not succeed; Error says why (e.g. "exit status 3").
	Failed   bool
	Error    string
	TimedOut bool
	// OutputLimit is set when the command printed more than it: the limit.
	OutputLimit int64
	Timeout     time.Duration
}

// ChangeKind says how a path of the tree changed.
type ChangeKind string

const (
	Added    ChangeKind = "added"
	Modified ChangeKind = "modified"
	Removed  ChangeKind = "removed"
)

// Change is a path that differs from the uploaded tree.
type Change struct {
	// Path is slash-separated and relative to the tree's root.
	Path string
	Kind ChangeKind
	// Regular is set when the path is (now) a regular file; Data then holds its content and
	// Mode its permission bits. Anything else (a directory, a link) is reported without content.
	Regular bool
	Mode    uint32
	Data    []byte
}
