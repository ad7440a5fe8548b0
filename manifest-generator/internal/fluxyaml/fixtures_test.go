package fluxyaml

import (
	"os"
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

// toolRunner runs commands with the repository's bin/ first on PATH, so
// `kustomize` and `helm` in .flux.yaml resolve to the pinned builds.
func toolRunner(t *testing.T) *Runner {
	t.Helper()
	return &Runner{Path: toolsBin(t) + ":" + DefaultPath, Home: t.TempDir()}
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
