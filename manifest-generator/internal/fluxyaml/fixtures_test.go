package fluxyaml

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// writeTree writes files (path relative to root → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// toolsBin is the repository's bin/ directory, where `make tools` builds
// kustomize and helm.
func toolsBin(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// requireTool fails (never skips) when a generator binary is missing.
func requireTool(t *testing.T, name string) {
	t.Helper()
	p := filepath.Join(toolsBin(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s: run `make tools` to build it", name, p)
	}
}

// shell runs the commands of the tests as /bin/sh -c in dir, with PATH (DefaultPath when
// empty), a HOME and the per-call variables: the contract of an Executor, without the limits
// and the isolation of the runner, whose own tests (package runner) cover them.
type shell struct{ path string }

func (s shell) Run(ctx context.Context, cmd Command, dir string, env map[string]string) ([]byte, error) {
	path := s.path
	if path == "" {
		path = DefaultPath
	}
	home, err := os.MkdirTemp("", "fluxyaml-test-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd.Command)
	c.Dir = dir
	c.Env = []string{"PATH=" + path, "HOME=" + home}
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, &CommandError{Command: cmd.Command, ExitCode: c.ProcessState.ExitCode(), Stderr: stderr.String(), Err: err}
	}
	return out, nil
}

// toolRunner runs commands with the repository's bin/ first on PATH, so
// `kustomize` and `helm` in .flux.yaml resolve to the pinned builds.
func toolRunner(t *testing.T) shell {
	t.Helper()
	return shell{path: toolsBin(t) + ":" + DefaultPath}
}

// realTempDir is t.TempDir with symlinks resolved, to compare with what
// commands see as their working directory.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
