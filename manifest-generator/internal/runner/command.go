package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

const (
	stderrTail = 4 << 10
	// pipeGrace bounds the wait for output pipes after the process group
	// is gone: a descendant that left the group (setsid) may hold them.
	pipeGrace = 2 * time.Second
)

// command runs .flux.yaml commands as processes of the session's job. Commands see only PATH, HOME, Env and
// the per-call variables, never the controller's environment, which holds
// credentials and service account settings.
type command struct {
	// Path is the PATH given to commands (fluxyaml.DefaultPath when empty).
	Path string
	// Home is the HOME given to commands, a scratch directory; when empty
	// each Run gets a fresh temporary one.
	Home string
	// Env are user-set variables (spec.env). PATH, HOME and FLUX_* are
	// reserved and rejected (see fluxyaml.IsReservedEnv).
	Env map[string]string
	// DefaultTimeout applies to commands without a timeout
	// (fluxyaml.DefaultTimeout when zero).
	DefaultTimeout time.Duration
	// MaxOutput caps stdout in bytes (fluxyaml.DefaultMaxOutput when zero).
	MaxOutput int64
	// KillDescendants is set in a child subreaper (proctree.BecomeSubreaper) that runs one
	// command at a time: then, when a command ends, every descendant of this process is
	// killed, those that left the command's process group (setsid, double fork) included.
	KillDescendants bool
}

// Run runs cmd with /bin/sh -c in dir and returns its stdout. The command
// runs in its own process group; when it times out, ctx ends or its output
// exceeds MaxOutput the whole group is killed, and whatever it left running
// in the background is killed once it exits (with KillDescendants, also what
// left the group). Failures are *CommandError.
// A nil command runs with the defaults.
func (r *command) Run(ctx context.Context, cmd fluxyaml.Command, dir string, extraEnv map[string]string) ([]byte, error) {
	if r == nil {
		r = &command{}
	}
	timeout := r.DefaultTimeout
	if timeout <= 0 {
		timeout = fluxyaml.DefaultTimeout
	}
	if cmd.Timeout != nil && cmd.Timeout.Duration > 0 {
		timeout = cmd.Timeout.Duration
	}
	limit := r.MaxOutput
	if limit <= 0 {
		limit = fluxyaml.DefaultMaxOutput
	}
	cmdErr := &fluxyaml.CommandError{Command: cmd.Command, ExitCode: -1, Timeout: timeout}
	if err := ctx.Err(); err != nil {
		cmdErr.Err = err
		return nil, cmdErr
	}

	home := r.Home
	if home == "" {
		tmp, err := os.MkdirTemp("", "fluxyaml-home-")
		if err != nil {
			cmdErr.Err = err
			return nil, cmdErr
		}
		defer os.RemoveAll(tmp)
		home = tmp
	}
	env, err := r.environ(home, extraEnv)
	if err != nil {
		cmdErr.Err = err
		return nil, cmdErr
	}

	c, stdoutR, stderrR, err := startShell(cmd.Command, dir, env)
	if err != nil {
		cmdErr.Err = err
		return nil, cmdErr
	}
	defer stdoutR.Close()
	defer stderrR.Close()

	overflow := make(chan struct{})
	stdout := &cappedBuffer{limit: limit, onOverflow: func() { close(overflow) }}
	stderr := &tailBuffer{max: stderrTail}
	var readers sync.WaitGroup
	readers.Go(func() { _, _ = io.Copy(stdout, stdoutR) })
	readers.Go(func() { _, _ = io.Copy(stderr, stderrR) })

	waitErr, interrupted := r.wait(ctx, c, timeout, overflow)
	drain(&readers, stdoutR, stderrR)

	cmdErr.Stderr = stderr.String()
	if c.ProcessState != nil {
		cmdErr.ExitCode = c.ProcessState.ExitCode()
	}
	switch {
	case stdout.overflowed:
		cmdErr.Err = fluxyaml.NewOutputTooLargeError(limit)
	case interrupted && ctx.Err() != nil:
		cmdErr.Err = ctx.Err()
	case interrupted:
		cmdErr.TimedOut = true
		cmdErr.Err = context.DeadlineExceeded
	case waitErr != nil:
		cmdErr.Err = waitErr
	default:
		return stdout.buf.Bytes(), nil
	}
	return nil, cmdErr
}

// wait waits for the shell c to exit, killing its process group at the timeout, when ctx is
// done or when its output overflows; interrupted says it was killed by the timeout or ctx. Then
// it kills whatever the command left running: nothing a command started may outlive it.
func (r *command) wait(ctx context.Context, c *exec.Cmd, timeout time.Duration, overflow <-chan struct{}) (waitErr error, interrupted bool) {
	pgid := c.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case waitErr = <-exited:
	case <-tctx.Done():
		killGroup(pgid)
		waitErr = <-exited
		interrupted = true
	case <-overflow:
		killGroup(pgid)
		waitErr = <-exited
	}
	killGroup(pgid)
	if r.KillDescendants {
		proctree.KillDescendants(os.Getpid())
	}
	return waitErr, interrupted
}

// drain waits for the readers of the command's pipes to reach their end, at most pipeGrace:
// then the pipes are closed under them, as a child that escaped the kill may still hold them.
func drain(readers *sync.WaitGroup, pipes ...*os.File) {
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(pipeGrace):
		for _, p := range pipes {
			p.Close()
		}
		<-drained
	}
}

// startShell starts command with /bin/sh in dir, in a process group of its own (so that the
// whole group can be killed), and returns the read ends of its stdout and stderr. They are our
// own pipes rather than exec's copying goroutines: Wait then returns when the shell exits, and
// the caller decides how long to wait for background children that still hold the pipes.
func startShell(command, dir string, env []string) (c *exec.Cmd, stdout, stderr *os.File, err error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, nil, nil, err
	}
	c = exec.Command("/bin/sh", "-c", command)
	c.Dir = dir
	c.Env = env
	c.Stdout = stdoutW
	c.Stderr = stderrW
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startErr := c.Start()
	stdoutW.Close()
	stderrW.Close()
	if startErr != nil {
		stdoutR.Close()
		stderrR.Close()
		return nil, nil, nil, startErr
	}
	return c, stdoutR, stderrR, nil
}

// environ builds the complete environment, sorted for reproducibility.
func (r *command) environ(home string, extraEnv map[string]string) ([]string, error) {
	path := r.Path
	if path == "" {
		path = fluxyaml.DefaultPath
	}
	vars := map[string]string{}
	for k, v := range r.Env {
		if err := checkEnvName(k); err != nil {
			return nil, err
		}
		if fluxyaml.IsReservedEnv(k) {
			return nil, fmt.Errorf("environment variable %s is reserved: PATH and HOME are set by the controller, FLUX_* by the updaters", k)
		}
		vars[k] = v
	}
	for k, v := range extraEnv {
		if err := checkEnvName(k); err != nil {
			return nil, err
		}
		if k == "PATH" || k == "HOME" {
			return nil, fmt.Errorf("environment variable %s is reserved", k)
		}
		vars[k] = v
	}
	vars["PATH"] = path
	vars["HOME"] = home

	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env, nil
}

func checkEnvName(name string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("invalid environment variable name %q", name)
	}
	return nil
}

// killGroup sends SIGKILL to the process group. Its error is ignored:
// ESRCH (the group is already gone) is the normal case after a clean exit.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// cappedBuffer keeps up to limit bytes. Past the limit it reports the
// overflow once and discards the rest, so the writer never blocks before
// it is killed.
type cappedBuffer struct {
	buf        bytes.Buffer
	limit      int64
	overflowed bool
	onOverflow func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.overflowed {
		return len(p), nil
	}
	if int64(b.buf.Len())+int64(len(p)) > b.limit {
		b.overflowed = true
		b.buf.Reset()
		b.onOverflow()
		return len(p), nil
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last max bytes written: the end of stderr is where
// tools explain why they failed.
type tailBuffer struct {
	b         []byte
	max       int
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		copy(t.b, t.b[over:])
		t.b = t.b[:t.max]
		t.truncated = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s := strings.ToValidUTF8(string(t.b), "\uFFFD")
	if t.truncated {
		s = "..." + s
	}
	return s
}
