package storage

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
)

// ArchiveFS of a tree that is not on disk writes the bytes Archive writes for the same tree on
// disk: same order, headers and exec bits, symlinks left out, the same ignore rules read from
// its .sourceignore files.
func TestArchiveFSIsArchiveOfTheSameTree(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	files := map[string]string{".sourceignore": "*.txt\n", "sub/.sourceignore": "!keep.txt\n", "sub/keep.txt": "k", "drop.txt": "d", ".git/config": "c"}
	for n, c := range sampleTree {
		files[n] = c
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	makeExecutable(t, dir, 0o744)
	spec := "/z/\n"
	filter, err := IgnoreFilter(dir, &spec)
	g.Expect(err).NotTo(HaveOccurred())
	want := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "dir.tar.gz")
	g.Expect(s.Archive(&want, dir, filter)).To(Succeed())

	tree := fstest.MapFS{"link.yaml": {Data: []byte("README.md"), Mode: fs.ModeSymlink | 0o777}}
	for n, c := range files {
		if strings.HasSuffix(n, "/") {
			tree[strings.TrimSuffix(n, "/")] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			continue
		}
		tree[n] = &fstest.MapFile{Data: []byte(c), Mode: 0o644}
	}
	tree["bin/run.sh"].Mode = 0o755
	filter, err = IgnoreFilterFS(tree, &spec)
	g.Expect(err).NotTo(HaveOccurred())
	got := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "fs.tar.gz")
	g.Expect(s.ArchiveFS(&got, tree, filter)).To(Succeed())

	g.Expect(got.Digest).To(Equal(want.Digest))
	g.Expect(archivedFiles(t, s, got)).To(HaveKey("sub/keep.txt"))
	g.Expect(archivedFiles(t, s, got)).NotTo(HaveKey("drop.txt"))
	g.Expect(archivedFiles(t, s, got)).NotTo(HaveKey("link.yaml"))
	g.Expect(archivedFiles(t, s, got)).NotTo(HaveKey("z/last.txt"))
}
