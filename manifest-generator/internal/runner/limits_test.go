package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// smallLimits are limits a test can pass quickly.
func smallLimits() runner.Limits {
	l := runner.DefaultLimits
	l.MaxProcesses = 64
	l.MaxFileSize = 1 << 20
	l.MaxDisk = 8 << 20
	l.MaxFiles = 300
	l.MaxChangedFiles = 5
	l.MaxChangedSize = 64 << 10
	l.MaxTimeout = time.Second
	return l
}

// runFails runs command in a new session of l and returns its error, which must be a
// *fluxyaml.CommandError.
func runFails(t *testing.T, g Gomega, l *runner.Local, command string, timeout time.Duration) *fluxyaml.CommandError {
	t.Helper()
	s, err := l.Session(newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	cmd := fluxyaml.Command{Command: command}
	if timeout > 0 {
		cmd.Timeout = &metav1.Duration{Duration: timeout}
	}
	_, err = s.Run(context.Background(), cmd, ".", nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "the command did not fail: %v", err)
	// The runner goes on serving the other sessions.
	next, err := l.Session(newTree(t, map[string]string{"b.yaml": "b: 1\n"}), runner.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer next.Close()
	g.Expect(run(g, next, "cat b.yaml", ".", nil)).To(Equal("b: 1\n"))
	return ce
}

// A session over its budget of processes, disk, files, file size or time ends with an error
// that names the limit and the runner flag that sets it.
func TestSessionsOverTheirBudget(t *testing.T) {
	l := startLocal(t, runner.LocalOptions{Limits: smallLimits()})

	t.Run("processes", func(t *testing.T) {
		requireRoot(t) // RLIMIT_NPROC counts per user: only sessions with users of their own get it
		g := NewWithT(t)
		ce := runFails(t, g, l, `i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; wait`, 0)
		g.Expect(ce.Error()).To(ContainSubstring("a session may run 64 processes and threads, --max-session-processes"))
	})
	t.Run("disk", func(t *testing.T) {
		g := NewWithT(t)
		start := time.Now()
		ce := runFails(t, g, l, `head -c 900000 /dev/zero > 1; for i in 2 3 4 5 6 7 8 9 10 11 12; do cp 1 $i; done; sleep 20`, 30*time.Second)
		g.Expect(ce.Error()).To(ContainSubstring("the session's files are over the runner's limit of 8388608 bytes (--max-session-disk)"))
		g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the command was not stopped when it passed the limit")
	})
	t.Run("files", func(t *testing.T) {
		g := NewWithT(t)
		ce := runFails(t, g, l, `i=0; while [ $i -lt 400 ]; do : > f$i; i=$((i+1)); done`, 30*time.Second)
		g.Expect(ce.Error()).To(ContainSubstring("over the runner's limit of 300 files (--max-session-files)"))
	})
	t.Run("file size", func(t *testing.T) {
		g := NewWithT(t)
		ce := runFails(t, g, l, `head -c 2000000 /dev/zero > big`, 0)
		g.Expect(ce.Error()).To(Or(ContainSubstring("File size limit exceeded"), ContainSubstring("file size limit exceeded")))
	})
	t.Run("timeout", func(t *testing.T) {
		g := NewWithT(t)
		start := time.Now()
		ce := runFails(t, g, l, `sleep 20`, time.Hour)
		g.Expect(ce.TimedOut).To(BeTrue())
		g.Expect(ce.Timeout).To(Equal(time.Second), "the command's hour is capped to the runner's maximum")
		g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	})
}

// An updater that changes more than the runner sends back fails the session's Changes with the
// limit's name: nothing of it is copied back.
func TestChangesOverTheirBudget(t *testing.T) {
	l := startLocal(t, runner.LocalOptions{Limits: smallLimits()})
	for flag, command := range map[string]string{
		"--max-changed-files": `for i in 1 2 3 4 5 6; do echo $i > new$i.yaml; done`,
		"--max-changed-size":  `head -c 70000 /dev/zero > big.yaml`,
	} {
		t.Run(flag, func(t *testing.T) {
			g := NewWithT(t)
			s, err := l.Session(newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{Track: true})
			g.Expect(err).NotTo(HaveOccurred())
			defer s.Close()
			run(g, s, command, ".", nil)
			_, err = s.Changes(context.Background())
			g.Expect(err).To(MatchError(ContainSubstring("the commands changed more than the runner's limit of")))
			g.Expect(err).To(MatchError(ContainSubstring(flag)))
		})
	}
}
