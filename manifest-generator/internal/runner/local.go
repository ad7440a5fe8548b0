package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultLocalUser is the user a local runner started by root runs as: the user of the
// Sluice images, so that commands never run as root on a developer's machine or in CI.
const DefaultLocalUser = 65532

// LocalOptions configure StartLocal.
type LocalOptions struct {
	// UID and GID the runner runs as when the caller is root (DefaultLocalUser when zero). A
	// caller that is not root cannot change users: the runner then runs as the caller, with a
	// clean environment but without the isolation a second user gives.
	UID, GID int
	// Stderr receives the runner's log (os.Stderr when nil).
	Stderr *os.File
}

// Local is a runner process started by StartLocal.
type Local struct {
	Client
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// StartLocal starts a runner as a child process of this one (the same binary, which must
// dispatch the `runner` subcommand with IsInvocation/Main): with an empty environment, as
// another user when this process is root, and killed when this process dies. Its socket and work
// directory are in a new temporary directory that only the runner's user can enter.
func StartLocal(opts LocalOptions) (*Local, error) {
	dir, err := os.MkdirTemp("", "sluice-runner-")
	if err != nil {
		return nil, err
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if os.Geteuid() == 0 {
		uid, gid := opts.UID, opts.GID
		if uid == 0 {
			uid = DefaultLocalUser
		}
		if gid == 0 {
			gid = uid
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	socket := filepath.Join(dir, "runner.sock")
	cmd := exec.Command("/proc/self/exe", "runner", "--socket", socket, "--workdir", filepath.Join(dir, "work"))
	cmd.Env = []string{}
	cmd.Dir = dir
	cmd.Stdout = opts.Stderr
	cmd.Stderr = opts.Stderr
	if opts.Stderr == nil {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the local runner: %w", err)
	}
	l := &Local{Client: Client{Socket: socket}, cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(l.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			_ = conn.Close()
			return l, nil
		}
		select {
		case <-l.done:
			_ = os.RemoveAll(dir)
			return nil, errors.New("the local runner exited at start; its log is above")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			l.Stop()
			return nil, fmt.Errorf("the local runner did not listen on %s within 30s", socket)
		}
	}
}

// Stop kills the runner and everything it runs, and removes its directory.
func (l *Local) Stop() {
	_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
	<-l.done
	_ = removeTree(l.dir)
}

// Done returns a channel closed when the runner exits.
func (l *Local) Done() <-chan struct{} { return l.done }

// StopOnCancel stops the runner when ctx ends.
func (l *Local) StopOnCancel(ctx context.Context) { context.AfterFunc(ctx, l.Stop) }
