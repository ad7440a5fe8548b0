package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// LocalUserSpace holds the users of local runners started by root: each takes a block of
// LocalUserBlock users at random from it, one per session, so that commands never run as root
// on a developer's machine or in CI and never see each other. Blocks are drawn, not fixed,
// because a runner kills every process of a session's user when the session ends: two local
// runners on one machine (`make dev` and the tests, or the tests' packages at once) must not
// share users. With 21 million blocks, two runners meet once in millions.
var LocalUserSpace = Users{First: 1_000_000, Last: 2_099_999_999}

// LocalUserBlock is the number of users, hence of concurrent sessions, of a local runner.
const LocalUserBlock = 100

// RandomLocalUsers draws a block of LocalUserSpace.
func RandomLocalUsers() Users {
	blocks := (LocalUserSpace.Last - LocalUserSpace.First + 1) / LocalUserBlock
	first := LocalUserSpace.First + rand.IntN(blocks)*LocalUserBlock
	return Users{First: first, Last: first + LocalUserBlock - 1}
}

// LocalOptions configure StartLocal.
type LocalOptions struct {
	// Users of the sessions when the caller is root (RandomLocalUsers when zero). A caller that
	// is not root cannot change users: the runner and its sessions then run as the caller, with
	// a clean environment and private trees, but without the isolation other users give.
	Users Users
	// Stderr receives the runner's log (os.Stderr when nil).
	Stderr *os.File
	// Limits of the sessions (DefaultLimits when zero).
	Limits Limits
}

// Local is a runner process started by StartLocal.
type Local struct {
	Client
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// StartLocal starts a runner as a child process of this one (the same binary, which must
// dispatch the `runner` subcommand with IsInvocation/Main): with an empty environment, each
// session as a user of its own when this process is root, and stopped when this process dies.
// Its socket and work directory are in a new temporary directory that only this process's user
// can enter (sessions reach their own directories below it).
func StartLocal(opts LocalOptions) (*Local, error) {
	dir, err := os.MkdirTemp("", "sluice-runner-")
	if err != nil {
		return nil, err
	}
	// SIGTERM when this process dies: the runner then kills everything its sessions started.
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	// The socket in a directory only this process's user enters; the sessions' users pass
	// through dir to the work directory.
	control := filepath.Join(dir, "control")
	if err := os.Mkdir(control, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	socket := filepath.Join(control, "runner.sock")
	uid := os.Geteuid()
	limits := opts.Limits
	if limits == (Limits{}) {
		limits = DefaultLimits
	}
	args := append([]string{"runner", "--socket", socket, "--workdir", filepath.Join(dir, "work"), "--client-uid", strconv.Itoa(uid)}, limits.args()...)
	if uid != 0 {
		args = append(args, "--insecure-shared-user")
	} else {
		if err := os.Chmod(dir, 0o711); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		users := opts.Users
		if users == (Users{}) {
			users = RandomLocalUsers()
		}
		args = append(args, "--job-users", users.String())
	}
	cmd := exec.Command("/proc/self/exe", args...)
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
	l := &Local{Client: Client{Socket: socket, RunnerUID: uid, RunnerPID: cmd.Process.Pid}, cmd: cmd, dir: dir, done: make(chan struct{})}
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

// Stop stops the runner and everything it runs, and removes its directory: SIGTERM first, on
// which the runner kills its sessions' processes; what is left after a few seconds is killed.
func (l *Local) Stop() {
	pid := l.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		proctree.KillDescendants(pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-l.done
	}
	_ = RemoveTree(l.dir)
}

// Done returns a channel closed when the runner exits.
func (l *Local) Done() <-chan struct{} { return l.done }

// StopOnCancel stops the runner when ctx ends.
func (l *Local) StopOnCancel(ctx context.Context) { context.AfterFunc(ctx, l.Stop) }
