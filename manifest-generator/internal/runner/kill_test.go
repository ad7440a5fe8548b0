package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// detach starts two children that escape the command's process group, one with setsid and one
// double-forked (an orphan), and waits until both wrote their pid to $PID_DIR.
const detach = `setsid sh -c 'echo $$ > "$PID_DIR/setsid"; exec sleep 300' sh &
(sh -c 'echo $$ > "$PID_DIR/orphan"; exec sleep 301' &)
until [ -s "$PID_DIR/setsid" ] && [ -s "$PID_DIR/orphan" ]; do sleep 0.05; done
`

// Nothing a command starts outlives it, not even children that left its process group: they
// are dead by the time Run returns, not some time later.
func TestRunKillsDetachedChildren(t *testing.T) {
	g := NewWithT(t)
	pids := proctest.SharedDir(t)
	s := newSession(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})

	g.Expect(run(g, s, detach+"echo done", ".", map[string]string{"PID_DIR": pids})).To(Equal("done\n"))
	for _, f := range []string{"setsid", "orphan"} {
		pid := proctest.ReadPid(g, filepath.Join(pids, f))
		g.Expect(proctest.Gone(pid)).To(BeTrue(), "the command's %s child (%d) survived it", f, pid)
	}
	// The session goes on.
	g.Expect(run(g, s, "echo ok", ".", nil)).To(Equal("ok\n"))
}

// Cancelling the context of a running command returns at once, ends the session (the controller
// gave up on it) and kills the command with everything it started.
func TestRunCancel(t *testing.T) {
	g := NewWithT(t)
	pids := proctest.SharedDir(t)
	local := newTree(t, map[string]string{"a.yaml": "a: 1\n"})
	s := newSession(t, local, runner.Options{DefaultTimeout: time.Hour})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.Run(ctx, fluxyaml.Command{Command: detach + `echo $$ > "$PID_DIR/shell"; sleep 300`}, ".", map[string]string{"PID_DIR": pids})
		done <- result{out, err}
	}()
	shell := proctest.ReadPid(g, filepath.Join(pids, "shell"))
	setsid := proctest.ReadPid(g, filepath.Join(pids, "setsid"))
	orphan := proctest.ReadPid(g, filepath.Join(pids, "orphan"))
	// Runs before the session's Close, which waits for a Run that did not return: a failure
	// must not hang the test for 300s.
	t.Cleanup(func() {
		for _, pid := range []int{shell, setsid, orphan} {
			if !proctest.Gone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	cancel()
	var res result
	g.Eventually(done, 2*time.Second).Should(Receive(&res), "Run did not return after its context was cancelled")
	g.Expect(res.out).To(BeNil())
	g.Expect(errors.Is(res.err, context.Canceled)).To(BeTrue(), "%v", res.err)

	// The session is broken: every later call fails.
	bg := context.Background()
	_, err := s.Run(bg, fluxyaml.Command{Command: "echo ran"}, ".", nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(s.WriteFile(bg, "x.yaml", []byte("x"), 0o644)).NotTo(Succeed())
	_, err = s.Changes(bg)
	g.Expect(err).To(HaveOccurred())

	for name, pid := range map[string]int{"shell": shell, "setsid": setsid, "orphan": orphan} {
		g.Eventually(func() bool { return proctest.Gone(pid) }, 5*time.Second).Should(BeTrue(), "the cancelled command's %s process (%d) survived", name, pid)
	}
	// The runner serves new sessions.
	g.Expect(run(g, newSession(t, local, runner.Options{}), "echo ok", ".", nil)).To(Equal("ok\n"))
}

// When a session ends, the daemon kills what its job left behind: never the processes of the
// other sessions, which keep running their commands.
func TestCloseLeavesOtherSessionsRunning(t *testing.T) {
	g := NewWithT(t)
	pids := proctest.SharedDir(t)
	local := newTree(t, map[string]string{"a.yaml": "a: 1\n"})
	busy := newSession(t, local, runner.Options{DefaultTimeout: time.Hour})
	idle := newSession(t, local, runner.Options{})
	run(g, idle, "true", ".", nil)
	stop := filepath.Join(pids, "stop")
	// Runs before the sessions' Close, which would wait for a Run still waiting for stop.
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o644) })

	done := make(chan error, 1)
	go func() {
		_, err := busy.Run(context.Background(), fluxyaml.Command{Command: `echo $$ > "$PID_DIR/busy"; until [ -e "$PID_DIR/stop" ]; do sleep 0.05; done; echo finished`}, ".", map[string]string{"PID_DIR": pids})
		done <- err
	}()
	pid := proctest.ReadPid(g, filepath.Join(pids, "busy"))
	// The daemon kills the orphans of an ended session; it must spare the other sessions.
	g.Expect(idle.Close()).To(Succeed())
	g.Consistently(func() bool { return proctest.Gone(pid) }, 500*time.Millisecond).Should(BeFalse(), "closing a session killed another session's command")

	g.Expect(os.WriteFile(stop, nil, 0o644)).To(Succeed())
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
}
