package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

// The process runner of a session's job, run directly: environment, working directory, exit
// codes, timeouts, output limits and the killing of what a command leaves behind.

// realTempDir is t.TempDir with symlinks resolved, to compare with what commands see as their
// working directory.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCommandEnvironmentIsExactlyTheAllowedSet(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("SLUICE_TEST_GIT_TOKEN", "hunter2-do-not-leak")
	dir := realTempDir(t)
	home := realTempDir(t)
	r := &command{
		Path: "/usr/bin:/bin",
		Home: home,
		Env:  map[string]string{"KUSTOMIZE_PLUGIN_HOME": "/plugins", "EMPTY": ""},
	}

	out, err := r.Run(context.Background(), fluxyaml.Command{Command: "env"}, dir, map[string]string{"FLUX_WL_NAME": "foo"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).NotTo(ContainSubstring("hunter2"))

	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	// The shell itself exports PWD; it must be the target path.
	if pwd, ok := got["PWD"]; ok {
		g.Expect(pwd).To(Equal(dir))
		delete(got, "PWD")
	}
	g.Expect(got).To(Equal(map[string]string{
		"PATH":                  "/usr/bin:/bin",
		"HOME":                  home,
		"KUSTOMIZE_PLUGIN_HOME": "/plugins",
		"EMPTY":                 "",
		"FLUX_WL_NAME":          "foo",
	}))
}

func TestCommandDefaultsPathAndScratchHome(t *testing.T) {
	g := NewWithT(t)
	r := &command{}
	out, err := r.Run(context.Background(), fluxyaml.Command{Command: `echo "$PATH"; test -d "$HOME" && test -w "$HOME" && echo "$HOME"`}, t.TempDir(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	g.Expect(lines).To(HaveLen(2))
	g.Expect(lines[0]).To(Equal(fluxyaml.DefaultPath))
	// The scratch HOME is gone after the run.
	g.Expect(lines[1]).NotTo(BeAnExistingFile())
}

func TestCommandRefusesReservedEnv(t *testing.T) {
	for _, name := range []string{"PATH", "HOME", "FLUX_IMG", "FLUX_POLICY_VALUE"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := &command{Env: map[string]string{name: "x"}}
			_, err := r.Run(context.Background(), fluxyaml.Command{Command: "true"}, t.TempDir(), nil)
			g.Expect(err).To(MatchError(ContainSubstring("environment variable " + name + " is reserved")))
			g.Expect(fluxyaml.IsReservedEnv(name)).To(BeTrue())
		})
	}
	g := NewWithT(t)
	r := &command{Env: map[string]string{"A=B": "x"}}
	_, err := r.Run(context.Background(), fluxyaml.Command{Command: "true"}, t.TempDir(), nil)
	g.Expect(err).To(MatchError(ContainSubstring(`invalid environment variable name "A=B"`)))
}

func TestCommandWorkingDirectory(t *testing.T) {
	g := NewWithT(t)
	dir := realTempDir(t)
	out, err := (&command{}).Run(context.Background(), fluxyaml.Command{Command: "pwd -P"}, dir, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(out))).To(Equal(dir))
}

func TestCommandExitCodeAndStderr(t *testing.T) {
	g := NewWithT(t)
	_, err := (&command{}).Run(context.Background(), fluxyaml.Command{Command: "echo partial; echo 'boom: no kustomization' >&2; exit 3"}, t.TempDir(), nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(ce.ExitCode).To(Equal(3))
	g.Expect(ce.TimedOut).To(BeFalse())
	g.Expect(ce.Stderr).To(Equal("boom: no kustomization\n"))
	g.Expect(err.Error()).To(Equal(`command "echo partial; echo 'boom: no kustomization' >&2; exit 3" failed (exit status 3): boom: no kustomization`))

	ce.Role, ce.ConfigFile = "generator", ".flux.yaml"
	g.Expect(err.Error()).To(HavePrefix(`generator "echo partial; echo 'boom: no kustomization' >&2; exit 3" of .flux.yaml failed (exit status 3): boom`))
}

func TestCommandKeepsTheEndOfStderr(t *testing.T) {
	g := NewWithT(t)
	_, err := (&command{}).Run(context.Background(), fluxyaml.Command{Command: "head -c 20000 /dev/zero | tr '\\0' x >&2; echo THE-REASON >&2; exit 1"}, t.TempDir(), nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(len(ce.Stderr)).To(BeNumerically("<=", stderrTail+len("...")))
	g.Expect(ce.Stderr).To(HavePrefix("..."))
	g.Expect(ce.Stderr).To(HaveSuffix("THE-REASON\n"))
}

func TestCommandMissingDirectory(t *testing.T) {
	g := NewWithT(t)
	_, err := (&command{}).Run(context.Background(), fluxyaml.Command{Command: "true"}, filepath.Join(t.TempDir(), "missing"), nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(ce.ExitCode).To(Equal(-1))
}

func TestCommandTimeoutKillsTheProcessGroup(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	cmd := fluxyaml.Command{
		Command: "sleep 300 & echo $! > pidfile; wait",
		Timeout: &metav1.Duration{Duration: 300 * time.Millisecond},
	}
	start := time.Now()
	_, err := (&command{DefaultTimeout: time.Hour}).Run(context.Background(), cmd, dir, nil)
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))

	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(ce.TimedOut).To(BeTrue())
	g.Expect(err.Error()).To(Equal(`command "sleep 300 & echo $! > pidfile; wait" timed out after 300ms`))

	child := proctest.ReadPid(g, filepath.Join(dir, "pidfile"))
	g.Eventually(func() bool { return proctest.Gone(child) }).Should(BeTrue(), "background child %d survived the timeout", child)
}

func TestCommandDefaultTimeout(t *testing.T) {
	g := NewWithT(t)
	_, err := (&command{DefaultTimeout: 200 * time.Millisecond}).Run(context.Background(), fluxyaml.Command{Command: "sleep 300"}, t.TempDir(), nil)
	g.Expect(err).To(MatchError(HaveSuffix("timed out after 200ms")))
}

func TestCommandKillsBackgroundChildrenAfterExit(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	start := time.Now()
	out, err := (&command{}).Run(context.Background(), fluxyaml.Command{Command: "sleep 300 & echo $! > pidfile; echo done"}, dir, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("done\n"))
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))
	child := proctest.ReadPid(g, filepath.Join(dir, "pidfile"))
	g.Eventually(func() bool { return proctest.Gone(child) }).Should(BeTrue(), "background child %d outlived the command", child)
}

func TestCommandCancel(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, err := (&command{}).Run(ctx, fluxyaml.Command{Command: "sleep 300"}, t.TempDir(), nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(ce.TimedOut).To(BeFalse())
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	g.Expect(err.Error()).To(Equal(`command "sleep 300" was interrupted: context canceled`))
}

func TestCommandOutputCap(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	r := &command{MaxOutput: 1 << 20}
	// Without the kill, the trailing sleep would run into the 10 minute timeout.
	cmd := fluxyaml.Command{
		Command: "echo $$ > pidfile; head -c 10485760 /dev/zero; sleep 300",
		Timeout: &metav1.Duration{Duration: 10 * time.Minute},
	}
	start := time.Now()
	out, err := r.Run(context.Background(), cmd, dir, nil)
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))
	g.Expect(out).To(BeNil())
	g.Expect(errors.Is(err, fluxyaml.ErrOutputTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("failed: output larger than 1048576 bytes"))
	shell := proctest.ReadPid(g, filepath.Join(dir, "pidfile"))
	g.Eventually(func() bool { return proctest.Gone(shell) }).Should(BeTrue())

	// Output up to the cap is fine.
	out, err = r.Run(context.Background(), fluxyaml.Command{Command: "head -c 1048576 /dev/zero"}, dir, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveLen(1 << 20))
}
