package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// commandError is the *fluxyaml.CommandError in err; the test fails when there is none.
func commandError(g Gomega, err error) *fluxyaml.CommandError {
	var ce *fluxyaml.CommandError
	g.ExpectWithOffset(1, errors.As(err, &ce)).To(BeTrue(), "not a CommandError: %v", err)
	return ce
}

// A failing command gives the controller the same CommandError as a local run: exit code and
// the end of stderr, for the user's status.
func TestRunFailedCommand(t *testing.T) {
	g := NewWithT(t)
	s := newSession(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
	out, err := s.Run(context.Background(), fluxyaml.Command{Command: "echo partial; echo 'no such chart' >&2; exit 3"}, ".", nil)
	g.Expect(out).To(BeNil())
	ce := commandError(g, err)
	g.Expect(ce.Command).To(Equal("echo partial; echo 'no such chart' >&2; exit 3"))
	g.Expect(ce.ExitCode).To(Equal(3))
	g.Expect(ce.Stderr).To(Equal("no such chart\n"))
	g.Expect(ce.TimedOut).To(BeFalse())
	g.Expect(err.Error()).To(Equal(`command "echo partial; echo 'no such chart' >&2; exit 3" failed (exit status 3): no such chart`))
	// A failed command does not break the session.
	g.Expect(run(g, s, "echo ok", ".", nil)).To(Equal("ok\n"))
}

// A command over its timeout, the session's default or its own, is killed and reported as timed
// out.
func TestRunTimeout(t *testing.T) {
	local := newTree(t, map[string]string{"a.yaml": "a: 1\n"})
	for _, tc := range []struct {
		name     string
		opts     runner.Options
		cmd      fluxyaml.Command
		expected time.Duration
	}{
		{"default", runner.Options{DefaultTimeout: 300 * time.Millisecond}, fluxyaml.Command{Command: "sleep 300"}, 300 * time.Millisecond},
		{"own", runner.Options{DefaultTimeout: time.Hour},
			fluxyaml.Command{Command: "sleep 300", Timeout: &metav1.Duration{Duration: 200 * time.Millisecond}}, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newSession(t, local, tc.opts)
			run(g, s, "true", ".", nil) // the upload is not part of the command's time
			start := time.Now()
			_, err := s.Run(context.Background(), tc.cmd, ".", nil)
			g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
			ce := commandError(g, err)
			g.Expect(ce.TimedOut).To(BeTrue())
			g.Expect(ce.Timeout).To(Equal(tc.expected))
			g.Expect(ce.ExitCode).To(Equal(-1))
			g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(Equal(`command "sleep 300" timed out after ` + tc.expected.String()))
			// The timeout is the command's: the session goes on.
			g.Expect(run(g, s, "echo ok", ".", nil)).To(Equal("ok\n"))
		})
	}
}

// Output over Options.MaxOutput fails the command with ErrOutputTooLarge; output up to it passes.
func TestRunOutputTooLarge(t *testing.T) {
	g := NewWithT(t)
	s := newSession(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{MaxOutput: 1000})
	out, err := s.Run(context.Background(), fluxyaml.Command{Command: "head -c 1001 /dev/zero"}, ".", nil)
	g.Expect(out).To(BeNil())
	commandError(g, err)
	g.Expect(errors.Is(err, fluxyaml.ErrOutputTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("output larger than 1000 bytes"))

	g.Expect(run(g, s, "head -c 1000 /dev/zero", ".", nil)).To(HaveLen(1000))
}

// A command runs inside its tree only: a directory outside it, through `..`, an absolute path
// or a link a command made, is refused before anything runs.
func TestRunRefusesDirectoriesOutsideTheTree(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{"sub/a.yaml": "a: 1\n"})
	s := newSession(t, local, runner.Options{})
	run(g, s, "ln -s / root-link; ln -s .. up-link; ln -s sub in-link", ".", nil)

	for dir, reason := range map[string]string{
		"/etc":                     "outside the tree",
		filepath.Dir(local):        "outside the tree",
		filepath.Join(local, ".."): "outside the tree",
		"../x":                     "outside the tree",
		"root-link":                "resolves outside the tree",
		"up-link":                  "resolves outside the tree",
		"missing":                  "no such file or directory",
	} {
		out, err := s.Run(context.Background(), fluxyaml.Command{Command: "echo ran"}, dir, nil)
		g.Expect(err).To(MatchError(ContainSubstring(reason)), "in %s", dir)
		g.Expect(out).To(BeNil())
		g.Expect(commandError(g, err).ExitCode).To(Equal(-1))
	}
	// A link that stays inside is fine, and the refusals did not break the session.
	g.Expect(run(g, s, "cat a.yaml", "in-link", nil)).To(Equal("a: 1\n"))
}
