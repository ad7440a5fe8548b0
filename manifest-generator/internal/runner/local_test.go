package runner_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// startLocal starts a runner of its own for a test that stops it. Without users in opts, it
// gets ten of its own, not those of the package's runner (nor of the runner a previous test may
// still be stopping): a runner kills every process of a session's user when the session ends,
// so two runners must never share users.
func startLocal(t *testing.T, opts runner.LocalOptions) *runner.Local {
	t.Helper()
	if opts.Users == (runner.Users{}) {
		first := 65800 + 10*(localRunners.Add(1)%20)
		opts.Users = runner.Users{First: int(first), Last: int(first) + 9}
	}
	l, err := runner.StartLocal(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return l
}

// localRunners counts the runners startLocal started.
var localRunners atomic.Int64

// A local runner started by root runs its sessions as the users it is given; Stop ends it, and
// its sessions fail from then on.
func TestStartLocalAsAnotherUser(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	l := startLocal(t, runner.LocalOptions{Users: runner.Users{First: 65533, Last: 65533}})
	local := newTree(t, map[string]string{"a.yaml": "a: 1\n"})
	s, err := l.Session(local, runner.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	g.Expect(strings.Fields(run(g, s, "id -u; id -g", ".", nil))).To(Equal([]string{"65533", "65533"}))

	l.Stop()
	g.Expect(l.Done()).To(BeClosed())
	s2, err := l.Session(local, runner.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer s2.Close()
	_, err = s2.Run(context.Background(), fluxyaml.Command{Command: "true"}, ".", nil)
	g.Expect(err).To(MatchError(ContainSubstring("connecting to the runner")))
}

// Stop kills the runner "and everything it runs": a command running at the time included.
func TestStopKillsRunningCommands(t *testing.T) {
	g := NewWithT(t)
	pids := proctest.SharedDir(t)
	l := startLocal(t, runner.LocalOptions{})
	s, err := l.Session(newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{DefaultTimeout: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.Close() })
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), fluxyaml.Command{Command: `echo $$ > "$PID_DIR/shell"; exec sleep 300`}, ".", map[string]string{"PID_DIR": pids})
		done <- err
	}()
	pid := proctest.ReadPid(g, filepath.Join(pids, "shell"))
	// Runs before the session's Close, which waits for Run: a surviving command must not hang
	// the test for 300s.
	t.Cleanup(func() {
		if !proctest.Gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	l.Stop()
	g.Eventually(func() bool { return proctest.Gone(pid) }, 5*time.Second).Should(BeTrue(), "the command (%d) outlived the stopped runner", pid)
	g.Eventually(done, 5*time.Second).Should(Receive(HaveOccurred()), "Run did not return when the runner stopped")
}
