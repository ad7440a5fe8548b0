package copyback_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/copyback"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// clone writes a small repository: a staging target, a production directory beside it, .git.
func clone(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"staging/app.yaml":    "image: app:v1\n",
		"production/app.yaml": "image: app:v1\n",
		".git/config":         "[core]\n",
	} {
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

func edit(path string) runner.Change {
	return runner.Change{Path: path, Kind: runner.Modified, Regular: true, Mode: 0o644, Data: []byte("image: app:v2\n")}
}

func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		changes []runner.Change
		refused string
	}{
		"an edit in the target":        {changes: []runner.Change{edit("staging/app.yaml")}},
		"an edit beside the target":    {changes: []runner.Change{edit("production/app.yaml")}, refused: "outside the target path"},
		"a path that climbs out":       {changes: []runner.Change{edit("staging/../production/app.yaml")}, refused: "outside the target path"},
		"the repository's .git":        {changes: []runner.Change{edit("staging/../.git/config")}, refused: "outside the target path"},
		"an absolute path":             {changes: []runner.Change{edit("/etc/passwd")}, refused: "outside the target path"},
		"a new file":                   {changes: []runner.Change{{Path: "staging/new.yaml", Kind: runner.Added, Regular: true}}, refused: "may only edit existing files"},
		"a removed file":               {changes: []runner.Change{{Path: "staging/app.yaml", Kind: runner.Removed}}, refused: "may only edit existing files"},
		"a file turned into a link":    {changes: []runner.Change{{Path: "staging/app.yaml", Kind: runner.Modified}}, refused: "no longer a regular file"},
		"an edit of a file not in Git": {changes: []runner.Change{edit("staging/ghost.yaml")}, refused: "not a regular file of the repository"},
		"one bad change refuses all":   {changes: []runner.Change{edit("staging/app.yaml"), edit("production/app.yaml")}, refused: "production/app.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := clone(t)
			root, err := os.OpenRoot(dir)
			g.Expect(err).NotTo(HaveOccurred())
			defer root.Close()
			files, err := copyback.Check(root, "staging", tc.changes)
			if tc.refused != "" {
				var re *copyback.RefusedError
				g.Expect(err).To(BeAssignableToTypeOf(re))
				g.Expect(err.Error()).To(ContainSubstring(tc.refused))
				g.Expect(files).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(copyback.Write(root, files)).To(Succeed())
			g.Expect(os.ReadFile(filepath.Join(dir, "staging", "app.yaml"))).To(Equal([]byte("image: app:v2\n")))
			g.Expect(os.ReadFile(filepath.Join(dir, "production", "app.yaml"))).To(Equal([]byte("image: app:v1\n")))
		})
	}
}
