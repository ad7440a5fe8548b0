package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// testRunner is the runner of the tests: a separate process started from this test binary, as
// another user when the tests run as root (as in CI).
var testRunner *runner.Local

// canary is a variable of the test process (the controller here) that no command may see.
const canary = "SLUICE_RUNNER_TEST_CANARY"

func TestMain(m *testing.M) {
	// The test binary is also the runner: StartLocal re-executes it with `runner`, and the
	// daemon re-executes it with `runner job` for each session.
	if runner.IsInvocation(os.Args) {
		os.Exit(runner.Main(os.Args[2:]))
	}
	if isAttack(os.Args) {
		os.Exit(runAttack(os.Args[2:]))
	}
	if err := os.Setenv(canary, "hunter2-do-not-leak"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The runner inherits the umask; fixed so the modes the tests expect do not depend on the
	// shell that started them.
	syscall.Umask(0o022)
	local, err := runner.StartLocal(runner.LocalOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testRunner = local
	code := m.Run()
	local.Stop()
	if attackPath != "" {
		_ = os.RemoveAll(filepath.Dir(attackPath))
	}
	os.Exit(code)
}

// requireRoot skips a test that shows isolation by the runner's second user: without root the
// runner runs as the caller, and the isolation would be assumed, not shown. CI runs as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the runner runs commands as another user only when started by root")
	}
}

// newTree writes files (slash paths relative to the root) into a new local tree and returns
// its path, free of links as the session's root is.
func newTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newSession opens a session of the test runner on the tree at dir, closed when the test ends.
func newSession(t testing.TB, dir string, opts runner.Options) *runner.Session {
	t.Helper()
	s, err := testRunner.Session(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// run runs command in dir (of the session's tree) and returns its output; the command must
// succeed.
func run(g Gomega, s *runner.Session, command, dir string, env map[string]string) string {
	out, err := s.Run(context.Background(), fluxyaml.Command{Command: command}, dir, env)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(out)
}

func itoa(n int) string { return strconv.Itoa(n) }
