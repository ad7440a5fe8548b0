package storage

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

func newTestStorage(t testing.TB, opts Options) *Storage {
	t.Helper()
	if opts.BasePath == "" {
		opts.BasePath = filepath.Join(t.TempDir(), "storage")
	}
	if opts.AdvAddr == "" {
		opts.AdvAddr = "source-controller.flux-system.svc.cluster.local."
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func testObject(name string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: "default", Name: name}
}

// writeTree creates files (path -> content) under dir; a path ending in "/" is a directory.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if n[len(n)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type tarEntry struct {
	hdr  tar.Header
	body string
}

// readArchive returns the entries of a stored artifact in archive order and checks the gzip
// header carries nothing that varies between runs.
func readArchive(t testing.TB, path string) []tarEntry {
	t.Helper()
	g := NewWithT(t)
	f, err := os.Open(path)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	gz, err := gzip.NewReader(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gz.Name).To(BeEmpty())
	g.Expect(gz.Comment).To(BeEmpty())
	g.Expect(gz.ModTime.IsZero()).To(BeTrue(), "gzip mtime %v", gz.ModTime)
	tr := tar.NewReader(gz)
	var out []tarEntry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		out = append(out, tarEntry{hdr: *hdr, body: string(body)})
	}
}

// archivedFiles returns the regular files of a stored artifact: name -> content.
func archivedFiles(t testing.TB, s *Storage, a meta.Artifact) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range readArchive(t, s.LocalPath(a)) {
		if e.hdr.Typeflag == tar.TypeReg {
			out[e.hdr.Name] = e.body
		}
	}
	return out
}

// extractArtifact extracts a stored artifact with the consumer's code and returns its files.
func extractArtifact(t testing.TB, s *Storage, a meta.Artifact) map[string]string {
	t.Helper()
	g := NewWithT(t)
	f, err := os.Open(s.LocalPath(a))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	dir := t.TempDir()
	g.Expect(artifact.Extract(f, dir, artifact.Limits{})).To(Succeed())
	out := map[string]string{}
	g.Expect(filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})).To(Succeed())
	return out
}

// age sets the mtime of path to d ago.
func age(t testing.TB, path string, d time.Duration) {
	t.Helper()
	ts := time.Now().Add(-d)
	if err := os.Chtimes(path, ts, ts); err != nil {
		t.Fatal(err)
	}
}
