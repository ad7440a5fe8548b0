package patch

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestWriteFileAtomic(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "flux-patch.yaml")

	g.Expect(WriteFileAtomic(path, []byte("a: 1\n"), 0o600)).To(Succeed())
	g.Expect(os.ReadFile(path)).To(Equal([]byte("a: 1\n")))
	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

	g.Expect(WriteFileAtomic(path, []byte("b: 2\n"), 0o644)).To(Succeed())
	g.Expect(os.ReadFile(path)).To(Equal([]byte("b: 2\n")))
	info, err = os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o644)))

	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "no temporary file is left behind")

	g.Expect(WriteFileAtomic(filepath.Join(dir, "missing", "f.yaml"), []byte("x"), 0o644)).NotTo(Succeed())
	// A directory in the way: the rename fails and the temporary file goes.
	g.Expect(os.Mkdir(filepath.Join(dir, "sub"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "sub", "x"), nil, 0o644)).To(Succeed())
	g.Expect(WriteFileAtomic(filepath.Join(dir, "sub"), []byte("x"), 0o644)).NotTo(Succeed())
	entries, err = os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(2))
}
