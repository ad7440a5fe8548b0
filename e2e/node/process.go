package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one of the node's daemons, its output in <state>/<name>.log.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error
}

// startProcess runs bin with args, in a process group of its own so that a signal to the test
// (Ctrl-C) does not reach it before Stop has undone what it did, and with
// Pdeathsig so that it does not outlive the process that started it when that one dies.
func startProcess(stateDir, name, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(stateDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// running is nil while the process runs, else an error naming its log.
func (p *process) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); its log, %s, ends with:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 30))
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
