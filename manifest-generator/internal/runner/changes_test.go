package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Changes lists what commands changed in the tree, with the content of changed files, and
// nothing else: the controller copies back only these.
func TestChangesReportsWhatCommandsChanged(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	local := newTree(t, map[string]string{
		"keep.yaml":        "keep: 1\n",
		"edit.yaml":        "image: app:v1\n",
		"run.sh":           "#!/bin/sh\n",
		"gone.yaml":        "gone: 1\n",
		"link.yaml":        "replaced: by a link\n",
		"sub/inner.yaml":   "inner: 1\n",
		"sub/touched.yaml": "touched: 1\n",
	})
	s := newSession(t, local, runner.Options{Track: true})

	// Nothing changed yet, reading included.
	run(g, s, "cat keep.yaml sub/touched.yaml >/dev/null", ".", nil)
	g.Expect(s.Changes(ctx)).To(BeEmpty())

	run(g, s, `printf 'image: app:v2\n' > edit.yaml
chmod 755 run.sh
rm gone.yaml
ln -sf keep.yaml link.yaml
mkdir added && printf 'new: 1\n' > added/new.yaml
printf 'touched: 1\n' > sub/touched.yaml`, ".", nil)

	// Sorted by path; sub/touched.yaml was rewritten with the same content, so it is unchanged.
	g.Expect(s.Changes(ctx)).To(Equal([]runner.Change{
		{Path: "added", Kind: runner.Added, Mode: 0o755},
		{Path: "added/new.yaml", Kind: runner.Added, Regular: true, Mode: 0o644, Data: []byte("new: 1\n")},
		{Path: "edit.yaml", Kind: runner.Modified, Regular: true, Mode: 0o644, Data: []byte("image: app:v2\n")},
		{Path: "gone.yaml", Kind: runner.Removed},
		{Path: "link.yaml", Kind: runner.Modified, Mode: 0o777},
		{Path: "run.sh", Kind: runner.Modified, Regular: true, Mode: 0o755, Data: []byte("#!/bin/sh\n")},
	}))
	// The local tree is untouched: copying back is the controller's decision.
	g.Expect(os.ReadFile(filepath.Join(local, "edit.yaml"))).To(Equal([]byte("image: app:v1\n")))
}

// WriteFile writes into the session's tree (the controller's own edits): commands see the file
// and Changes reports it, the local tree does not get it.
func TestWriteFile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	local := newTree(t, map[string]string{"app.yaml": "v: 1\n"})
	s := newSession(t, local, runner.Options{Track: true})

	g.Expect(s.WriteFile(ctx, "patches/patch.yaml", []byte("patch: 1\n"), 0o640)).To(Succeed())
	g.Expect(s.WriteFile(ctx, "app.yaml", []byte("v: 2\n"), 0o644)).To(Succeed())
	g.Expect(run(g, s, "cat patch.yaml ../app.yaml", "patches", nil)).To(Equal("patch: 1\nv: 2\n"))

	g.Expect(s.Changes(ctx)).To(Equal([]runner.Change{
		{Path: "app.yaml", Kind: runner.Modified, Regular: true, Mode: 0o644, Data: []byte("v: 2\n")},
		{Path: "patches", Kind: runner.Added, Mode: 0o755},
		{Path: "patches/patch.yaml", Kind: runner.Added, Regular: true, Mode: 0o640, Data: []byte("patch: 1\n")},
	}))
	g.Expect(filepath.Join(local, "patches")).NotTo(BeAnExistingFile())
	g.Expect(os.ReadFile(filepath.Join(local, "app.yaml"))).To(Equal([]byte("v: 1\n")))

	// A name that leaves the tree is refused, and the session goes on.
	g.Expect(s.WriteFile(ctx, "../escape.yaml", []byte("x"), 0o644)).NotTo(Succeed())
	g.Expect(run(g, s, "ls ..", ".", nil)).NotTo(ContainSubstring("escape.yaml"))
}

// Without Options.Track the runner keeps no record of the upload, and Changes says so rather
// than reporting nothing.
func TestChangesNeedsTrack(t *testing.T) {
	g := NewWithT(t)
	s := newSession(t, newTree(t, map[string]string{"app.yaml": "v: 1\n"}), runner.Options{})
	run(g, s, "echo 'v: 2' > app.yaml", ".", nil)
	_, err := s.Changes(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("does not track changes")))
}
