package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// apiServer is a kube-apiserver process that the harness started again after StopAPIServer.
type apiServer struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// StopAPIServer stops the kube-apiserver of the control plane, leaving etcd and every client as
// they are: SIGTERM, as an operator restarting it does, then SIGKILL if it is still running after
// grace (a grace of 0 kills it at once, as when its process or node dies: the requests in flight
// are cut). A kube-apiserver serving watches may take longer than a test can wait to drain them.
// StartAPIServer starts it again.
func (s *System) StopAPIServer(grace time.Duration) error {
	if s.apiServer != nil {
		p := s.apiServer
		s.apiServer = nil
		return stopProcess(p.cmd.Process.Pid, p.exited, grace)
	}
	pid, args, err := s.findAPIServer()
	if err != nil {
		return err
	}
	s.apiServerArgs = args
	return stopProcess(pid, nil, grace)
}

// StartAPIServer starts the kube-apiserver stopped by StopAPIServer again, with the command line
// it had: the same etcd, port, certificates and flags, so the controllers' and the test's
// clients reconnect to it as to a restarted server. It returns once /readyz answers 200; the
// server's output goes to kube-apiserver.log in the state directory.
func (s *System) StartAPIServer(ctx context.Context) error {
	if s.apiServer != nil || len(s.apiServerArgs) == 0 {
		return errors.New("StartAPIServer: the API server was not stopped by StopAPIServer")
	}
	logFile, err := os.OpenFile(filepath.Join(s.stateDir, "kube-apiserver.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.apiServerArgs[0], s.apiServerArgs[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	p := &apiServer{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	s.apiServer = p
	return s.waitAPIServerReady(ctx, p)
}

// waitAPIServerReady polls /readyz with the admin's credentials until it answers 200.
func (s *System) waitAPIServerReady(ctx context.Context, p *apiServer) error {
	httpClient, err := rest.HTTPClientFor(s.Env.Config)
	if err != nil {
		return err
	}
	httpClient.Timeout = 2 * time.Second
	url := strings.TrimSuffix(s.Env.Config.Host, "/") + "/readyz"
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("kube-apiserver exited before it was ready; see %s", filepath.Join(s.stateDir, "kube-apiserver.log"))
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := httpClient.Get(url)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}

// stopAPIServerOnExit stops a kube-apiserver started by StartAPIServer, before the control
// plane stops etcd (envtest knows nothing of it).
func (s *System) stopAPIServerOnExit() error {
	if s.apiServer == nil {
		return nil
	}
	return s.StopAPIServer(10 * time.Second)
}

// findAPIServer finds the kube-apiserver that envtest started: a child of this process running
// the control plane's binary on its secure port. envtest keeps the process to itself, so its
// process id and command line are read from /proc.
func (s *System) findAPIServer() (int, []string, error) {
	server := s.Env.Environment.ControlPlane.APIServer
	if server == nil {
		return 0, nil, errors.New("the control plane has no API server")
	}
	portFlag := "--secure-port=" + server.SecureServing.Port
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(pid) != os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if args[0] == server.Path && slices.Contains(args, portFlag) {
			return pid, args, nil
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver child process with %s", portFlag)
}

// parentOf is the parent process id of pid, from /proc/<pid>/stat; -1 when unknown.
func parentOf(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+1:])
	fields := strings.Fields(rest)
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}

// stopProcess sends SIGTERM (none when grace is 0), then SIGKILL after grace, and waits until
// the process is gone. exited, when not nil, is closed when our own Wait returns; otherwise the
// process is envtest's child, which envtest reaps, and is gone when signal 0 no longer reaches it.
func stopProcess(pid int, exited chan struct{}, grace time.Duration) error {
	gone := func() bool {
		if exited == nil {
			return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		}
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	waitGone := func(d time.Duration) bool {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if gone() {
				return true
			}
		}
		return gone()
	}
	if grace > 0 {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		if waitGone(grace) {
			return nil
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !waitGone(10 * time.Second) {
		return fmt.Errorf("kube-apiserver (pid %d) still running 10s after SIGKILL", pid)
	}
	return nil
}
