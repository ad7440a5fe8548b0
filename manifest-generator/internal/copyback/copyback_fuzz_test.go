package copyback_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/copyback"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Whatever list of changes the runner reports, what Check accepts and Write writes stays in the
// target path: the files outside it and .git keep their content, and nothing is created.
func FuzzCheck(f *testing.F) {
	for _, p := range []string{"staging/app.yaml", "staging/../production/app.yaml", "../app.yaml", "/etc/passwd",
		"staging/./app.yaml", "staging//app.yaml", ".git/config", "staging", "", "."} {
		f.Add(p, "modified", true, "staging")
	}
	f.Add("production/app.yaml", "modified", true, ".")
	f.Add("staging/app.yaml", "added", true, "staging")
	f.Fuzz(func(t *testing.T, path, kind string, regular bool, target string) {
		if !fs.ValidPath(target) {
			return // the controller's target paths are clean (the spec's path, validated)
		}
		dir := clone(t)
		before := snapshot(t, dir)
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		files, err := copyback.Check(root, target, []runner.Change{{Path: path, Kind: runner.ChangeKind(kind), Regular: regular, Data: []byte("changed\n")}})
		if err != nil {
			return
		}
		if err := copyback.Write(root, files); err != nil {
			t.Fatalf("an accepted change could not be written: %v", err)
		}
		after := snapshot(t, dir)
		if len(after) != len(before) {
			t.Fatalf("files were created or removed: %v -> %v", keys(before), keys(after))
		}
		for p, content := range before {
			if bytes.Equal(after[p], content) {
				continue
			}
			if !(target == "." || p == target || strings.HasPrefix(p, target+"/")) || strings.HasPrefix(p, ".git/") {
				t.Fatalf("change %q (target %q) wrote %s", path, target, p)
			}
		}
	})
}

func snapshot(t *testing.T, dir string) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
