package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// jobArg is the hidden subcommand of a session's process: `runner job <dir> <config>`, the
// connection on file descriptor 3.
const jobArg = "job"

// Config configures Serve.
type Config struct {
	// Socket is the path of the Unix socket the controller connects to.
	Socket string
	// Workdir holds the sessions' directories; it is emptied at start.
	Workdir string
	// Users gives each session a user of its own. Without it, SharedUser must be set.
	Users *Users
	// SharedUser runs every session as the runner's own user: sessions can then read and change
	// each other's files, and the runner's socket. For development as a non-root user only.
	SharedUser bool
	// ClientUID is the user of the controller: a connection from any other user is closed
	// before the runner takes anything for it.
	ClientUID int
	// Limits bound each session.
	Limits Limits
}

// jobConfig is what the daemon passes to a session process on its command line.
type jobConfig struct {
	Limits Limits
	// PerUser is set when the session runs as a user of its own.
	PerUser bool
	// Pod is set when the session is a pod of its own (`runner session`).
	Pod bool
}

// Serve accepts sessions on the Unix socket until ctx ends. Each session runs in a process of
// its own (the same binary, re-executed through /proc/self/exe), in a fresh directory under
// the work directory, which is emptied first; with users, as a user of its own. The daemon is a
// child subreaper too: what a crashed session process leaves behind is killed when it ends.
//
// The socket is the boundary between the controller and the commands: its directory is made
// writable by the runner alone (no command can rename or replace the socket), the socket by the
// controller's user alone, and each connection's peer is checked (SO_PEERCRED) before anything
// is taken for it.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	if cfg.Users == nil && !cfg.SharedUser {
		return errors.New("sessions need users of their own (--job-users); --insecure-shared-user runs them all as the runner's user, for development only")
	}
	if err := cfg.Limits.validate(); err != nil {
		return err
	}
	if err := proctree.BecomeSubreaper(); err != nil {
		return fmt.Errorf("becoming a subreaper: %w", err)
	}
	if err := os.MkdirAll(cfg.Workdir, 0o700); err != nil {
		return err
	}
	s := &server{cfg: cfg, log: log, jobs: map[int]bool{}, stopped: ctx.Done()}
	if cfg.Users != nil {
		s.users = newUserPool(*cfg.Users)
		// The sessions' users pass through the work directory to their own, but can neither
		// list it nor create anything in it.
		if err := os.Chmod(cfg.Workdir, 0o711); err != nil {
			return err
		}
		if err := secureSocketDir(filepath.Dir(cfg.Socket)); err != nil {
			return err
		}
	} else {
		log.Info("sessions run as the runner's own user: they can read each other's files and replace the socket (--insecure-shared-user)")
	}
	if err := emptyDir(cfg.Workdir); err != nil {
		return fmt.Errorf("emptying the work directory: %w", err)
	}
	ln, err := listen(cfg.Socket, cfg.ClientUID)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	log.Info("runner listening", "socket", cfg.Socket, "jobUsers", fmt.Sprint(cfg.Users), "clientUID", cfg.ClientUID)

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
		// Before a user or a directory is taken: a command that reached the socket gets nothing.
		cred, err := peerCred(conn)
		if err != nil || int(cred.Uid) != cfg.ClientUID {
			_ = conn.Close()
			if err == nil {
				err = fmt.Errorf("uid %d (pid %d) is not the controller's uid %d", cred.Uid, cred.Pid, cfg.ClientUID)
			}
			log.Info("refused a connection", "error", err)
			continue
		}
		wg.Go(func() { s.session(conn) })
	}
}

// secureSocketDir makes the socket's directory writable by the runner's user alone: whoever
// may write it may rename the socket and listen on its path in its place. A directory of
// another user (which the runner cannot change) is an error.
func secureSocketDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("the socket's directory %s belongs to uid %d, not to the runner's uid %d: the runner must own it, so that no command can replace the socket", dir, st.Uid, os.Geteuid())
	}
	// No group or other write, no setgid or sticky bit (an emptyDir comes 0777, or 2777 with an
	// fsGroup).
	return os.Chmod(dir, fi.Mode().Perm()&^0o022)
}

// listen creates the socket, connectable by clientUID alone (and root).
func listen(socket string, clientUID int) (*net.UnixListener, error) {
	_ = os.Remove(socket)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, err
	}
	err = os.Chmod(socket, 0o600)
	if err == nil && clientUID != os.Geteuid() {
		err = os.Chown(socket, clientUID, -1)
	}
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("giving the socket to the controller's user: %w", err)
	}
	return ln, nil
}

type server struct {
	cfg   Config
	log   *slog.Logger
	users *userPool // nil: sessions run as the runner's own user

	mu   sync.Mutex
	jobs map[int]bool // the session processes running

	stopped <-chan struct{} // closed when the runner stops
}

const (
	// killUserTimeout bounds one attempt at killing the processes of a session's user.
	killUserTimeout = 5 * time.Second
	// killUserRetry is the longest pause between two attempts at clearing a session's user,
	// when a process or an IPC object of it resisted: the pauses double from a second to it.
	killUserRetry = 30 * time.Second
)

// session runs the process of one session and cleans up after it.
func (s *server) session(conn *net.UnixConn) {
	defer conn.Close()
	uid := -1
	if s.users != nil {
		uid = s.users.acquire()
	}
	dir, err := os.MkdirTemp(s.cfg.Workdir, "job-")
	if err != nil {
		s.log.Error("creating a session directory", "error", err)
		if uid >= 0 {
			s.users.release(uid)
		}
		return
	}
	defer s.endSession(uid, dir)
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
	config, _ := json.Marshal(jobConfig{Limits: s.cfg.Limits, PerUser: uid >= 0})
	cmd := exec.Command("/proc/self/exe", "runner", jobArg, dir, string(config))
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

// endSession cleans up after the session of uid (-1: the runner's own user) in dir, once its
// job process ended (and KillDescendants killed what the job left): every process of its user
// is killed, whatever its state or parent, then its files, its System V IPC objects and its
// files in the shared scratch directories are removed, and only then is the user given to
// another session. A process of the user left behind would read the next session's tree, HOME
// and environment as the same user, and an IPC object left behind would be the next
// session's: while one of them resists (a process stuck in the kernel), the user stays out of
// the pool.
func (s *server) endSession(uid int, dir string) {
	if uid < 0 {
		_ = RemoveTree(dir)
		return
	}
	pause := time.Second
	for attempt := 0; ; attempt++ {
		left := proctree.KillUser(uid, killUserTimeout)
		if attempt == 0 {
			_ = RemoveTree(dir)
		}
		var err error
		if len(left) == 0 {
			var removed []ipcObject
			removed, err = removeIPCOf(uid)
			if len(removed) > 0 {
				s.log.Info("removed the System V IPC objects a session left", "uid", uid, "objects", fmt.Sprint(removed))
			}
			if err == nil {
				break
			}
			s.log.Error("removing the System V IPC objects of a session's user: the user goes to no other session until they are gone",
				"uid", uid, "error", err, "retryIn", pause.String())
		} else {
			s.log.Error("processes of a session's user survive SIGKILL: the user goes to no other session while they run",
				"uid", uid, "processes", describe(left), "retryIn", pause.String())
		}
		select {
		case <-s.stopped:
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, killUserRetry)
	}
	removeFilesOf(uid, sharedScratchDirs)
	s.users.release(uid)
}

// describe names processes for the log: pid, command name and state, as /proc/<pid>/stat has
// them (a process stuck in the kernel is in state D).
func describe(pids []int) string {
	names := make([]string, 0, len(pids))
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		end := bytes.LastIndexByte(stat, ')')
		if err != nil || end < 0 || len(stat) < end+3 {
			names = append(names, strconv.Itoa(pid)+" (gone)")
			continue
		}
		names = append(names, string(stat[:end+1])+" state "+string(stat[end+2]))
	}
	return strings.Join(names, ", ")
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
// lets it into a session's tree. The modes are changed through an os.Root: a directory that a
// command replaced by a link never leads the chmod outside the tree. A missing tree is no error.
func RemoveTree(dir string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return os.RemoveAll(dir) // a file or a link itself goes; nothing is followed
	}
	if root, err := os.OpenRoot(dir); err == nil {
		_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = root.Chmod(p, 0o777)
			}
			return nil
		})
		_ = root.Close()
	}
	return os.RemoveAll(dir)
}
