package testserver

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireGit fails the test when the git binary is not on PATH. It fails rather than skips:
// the Git tests are part of the suite, and a machine without git must not pass them silently.
func RequireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the git binary is needed: install git (apt-get install git)")
	}
}

// GitEnv is the environment the helpers run git with: the user's and the system's git
// configuration are ignored (a developer's url.insteadOf, signing or hooks settings would change
// the results), and git never prompts for credentials, since a test has no terminal to answer.
// Tests that run the git CLI as a client can use it too.
func GitEnv() []string {
	env := make([]string, 0, len(os.Environ())+4)
	for _, kv := range os.Environ() {
		// GIT_DIR and friends, set when tests run from a git hook, would redirect every command.
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
	)
}

// runGit runs git in dir with GitEnv plus extra and returns its trimmed standard output; it
// fails the test with git's standard error when git fails.
func runGit(t testing.TB, dir string, extra []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(GitEnv(), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("testserver: git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}
