package fluxyaml

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The error types below let the controller tell apart what the user must
// fix in Git (ConfigError, ManifestError) from a command that failed
// (CommandError), which may or may not succeed on a retry.

// ConfigError is an invalid .flux.yaml.
type ConfigError struct {
	File   string
	Reason string
}

func (e *ConfigError) Error() string { return e.File + ": " + e.Reason }

// ManifestError is generator output or a raw file that does not hold
// usable Kubernetes objects, including duplicate objects.
type ManifestError struct {
	Msg string
}

func (e *ManifestError) Error() string { return e.Msg }

// ErrOutputTooLarge is matched (errors.Is) by a CommandError whose command
// printed more than the runner's MaxOutput bytes.
var ErrOutputTooLarge = errors.New("output too large")

type outputTooLargeError struct{ limit int64 }

func (e *outputTooLargeError) Error() string {
	return fmt.Sprintf("output larger than %d bytes", e.limit)
}

func (e *outputTooLargeError) Is(target error) bool { return target == ErrOutputTooLarge }

// CommandError is a generator or updater command that did not succeed.
type CommandError struct {
	// Role is "generator", "containerImage updater" or "policy updater";
	// empty when the command was run directly, not as part of a config.
	Role       string
	Command    string
	ConfigFile string
	// Stderr is the end of the command's standard error (at most 4 KiB).
	Stderr string
	// ExitCode is the exit status, or -1 when the command was killed or
	// could not be started.
	ExitCode int
	TimedOut bool
	// Timeout is the limit the command ran under.
	Timeout time.Duration
	Err     error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	role := e.Role
	if role == "" {
		role = "command"
	}
	fmt.Fprintf(&b, "%s %q", role, e.Command)
	if e.ConfigFile != "" {
		fmt.Fprintf(&b, " of %s", e.ConfigFile)
	}
	switch {
	case e.TimedOut:
		fmt.Fprintf(&b, " timed out after %s", e.Timeout)
	case errors.Is(e.Err, ErrOutputTooLarge):
		fmt.Fprintf(&b, " failed: %v", e.Err)
	case errors.Is(e.Err, context.Canceled), errors.Is(e.Err, context.DeadlineExceeded):
		fmt.Fprintf(&b, " was interrupted: %v", e.Err)
	default:
		fmt.Fprintf(&b, " failed (%v)", e.Err)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Err }
