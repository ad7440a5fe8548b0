package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// jobArg is the hidden subcommand of a session's process: `runner job <dir>`, the connection on
// file descriptor 3.
const jobArg = "job"

// Serve accepts sessions on the Unix socket until ctx ends. Each session runs in a process of
// its own (the same binary, re-executed through /proc/self/exe), in a fresh directory under
// workdir, which is emptied first; with users, as a user of its own. The daemon is a child
// subreaper too: what a crashed session process leaves behind is killed when it ends.
func Serve(ctx context.Context, socket, workdir string, users *Users, log *slog.Logger) error {
	if err := proctree.BecomeSubreaper(); err != nil {
		return fmt.Errorf("becoming a subreaper: %w", err)
	}
	if err := os.MkdirAll(workdir, 0o700); err != nil {
		return err
	}
	s := &server{workdir: workdir, log: log, jobs: map[int]bool{}}
	if users != nil {
		s.users = newUserPool(*users)
		// The sessions' users pass through the work directory to their own, but cannot list it.
		if err := os.Chmod(workdir, 0o711); err != nil {
			return err
		}
	}
	if err := emptyDir(workdir); err != nil {
		return fmt.Errorf("emptying the work directory: %w", err)
	}
	_ = os.Remove(socket)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return err
	}
	// The socket's directory decides who connects: a directory only the controller and the
	// runner share (an emptyDir of the Pod, or a 0700 directory of a local runner).
	if err := os.Chmod(socket, 0o666); err != nil {
		_ = ln.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	log.Info("runner listening", "socket", socket, "jobUsers", fmt.Sprint(users))

	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			log.Error("accepting a session", "error", err)
			continue
		}
		wg.Go(func() { s.session(conn) })
	}
}

type server struct {
	workdir string
	log     *slog.Logger
	users   *userPool // nil: sessions run as the runner's own user

	mu   sync.Mutex
	jobs map[int]bool // the session processes running
}

// session runs the process of one session and cleans up after it.
func (s *server) session(conn *net.UnixConn) {
	defer conn.Close()
	uid := -1
	if s.users != nil {
		uid = s.users.acquire()
	}
	dir, err := os.MkdirTemp(s.workdir, "job-")
	if err != nil {
		s.log.Error("creating a session directory", "error", err)
		if uid >= 0 {
			s.users.release(uid)
		}
		return
	}
	// After the session: its files go, then its user is free again (KillDescendants below has
	// killed whatever of it was left).
	defer func() {
		_ = RemoveTree(dir)
		if uid >= 0 {
			s.users.release(uid)
		}
	}()
	if uid >= 0 {
		if err := os.Chown(dir, uid, uid); err != nil {
			s.log.Error("giving the session directory to its user", "error", err)
			return
		}
	}
	f, err := conn.File()
	if err != nil {
		s.log.Error("passing the session on", "error", err)
		return
	}
	cmd := exec.Command("/proc/self/exe", "runner", jobArg, dir)
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	// The job dies with the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if uid >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
	s.mu.Lock()
	err = cmd.Start()
	if err == nil {
		s.jobs[cmd.Process.Pid] = true
	}
	s.mu.Unlock()
	_ = f.Close()
	if err != nil {
		s.log.Error("starting a session process", "error", err)
		return
	}
	// The daemon's copy of the connection is closed, so the job alone holds it.
	_ = conn.Close()
	if err := cmd.Wait(); err != nil {
		s.log.Info("session process ended", "error", err)
	}
	s.mu.Lock()
	delete(s.jobs, cmd.Process.Pid)
	keep := make([]int, 0, len(s.jobs))
	for pid := range s.jobs {
		keep = append(keep, pid)
	}
	// Orphans of a session process that died without cleaning up are the daemon's now.
	proctree.KillDescendants(os.Getpid(), keep...)
	s.mu.Unlock()
}

// emptyDir removes everything in dir.
func emptyDir(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, de := range des {
		errs = append(errs, RemoveTree(filepath.Join(dir, de.Name())))
	}
	return errors.Join(errs...)
}

// RemoveTree deletes a tree whose directories may be read-only (the controller's checkouts, a
// session's tree whose commands took the write bits off): the directories are opened to everyone
// first, as unlinking an entry needs write permission on its directory, and a runner that
// switches users has CAP_FOWNER (it may chmod them) but not CAP_DAC_OVERRIDE, so only the mode
// lets it into a session's tree. A missing tree is no error.
func RemoveTree(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o777)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
