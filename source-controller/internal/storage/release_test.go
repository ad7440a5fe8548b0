package storage

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// A replica releases the artifacts of the objects it no longer keeps, of every kind, and
// nothing else: its own objects' artifacts and the temporary files stay.
func TestReleaseUnowned(t *testing.T) {
	g := NewWithT(t)
	s, err := New(Options{BasePath: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	files := []string{
		"gitrepository/team-a/app/abc.tar.gz", "gitrepository/team-a/moved/abc.tar.gz",
		"helmchart/team-a/moved/chart-1.0.0.tgz", "helmchart/team-b/app/chart-1.0.0.tgz",
		".tmp-upload/x",
	}
	for _, f := range files {
		p := filepath.Join(s.BasePath, filepath.FromSlash(f))
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte("x"), 0o644)).To(Succeed())
	}
	released, err := s.ReleaseUnowned(func(key string) bool { return key != "team-a/moved" })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(released).To(ConsistOf("gitrepository/team-a/moved", "helmchart/team-a/moved"))
	for _, f := range files {
		p := filepath.Join(s.BasePath, filepath.FromSlash(f))
		if filepath.Base(filepath.Dir(p)) == "moved" {
			g.Expect(p).NotTo(BeAnExistingFile())
		} else {
			g.Expect(p).To(BeAnExistingFile())
		}
	}
}
