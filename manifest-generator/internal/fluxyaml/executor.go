package fluxyaml

import "context"

// Executor runs .flux.yaml commands: runner.Session runs them in a private copy of the tree in
// the runner, a process without the controller's credentials, whose job process runs each as
// a process group of its own. dir is the directory to run in, inside the
// tree the caller generates from (see TargetDir); env are the per-call variables (FLUX_*).
// Failures of the command are *CommandError.
type Executor interface {
	Run(ctx context.Context, cmd Command, dir string, env map[string]string) ([]byte, error)
}

// NewOutputTooLargeError is the error of a command that printed more than limit bytes, for
// executors that learn of it from elsewhere (the runner's reply); it matches ErrOutputTooLarge.
func NewOutputTooLargeError(limit int64) error { return &outputTooLargeError{limit: limit} }
