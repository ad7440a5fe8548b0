package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"
)

// goodArchive has nested directories (one only implied by a file), an executable, an in-tree
// relative symlink at the top and one climbing back from a subdirectory, and a hard link.
func goodArchive(t *testing.T) []byte {
	return buildTarGz(t,
		dir("dir/"),
		file("dir/file", "hello"),
		file("dir/sub/deep/deep.txt", "deep"),
		entry{name: "bin/run.sh", body: "#!/bin/sh\necho hi\n", mode: 0o755},
		file("README.md", "readme"),
		symlink("link", "dir/file"),
		symlink("dir/sub/up", "../../bin/run.sh"),
		hardlink("hard", "dir/file"),
	)
}

func TestFetchExtractsAVerifiedArchive(t *testing.T) {
	data := goodArchive(t)
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA384, digest.SHA512} {
		t.Run(string(alg), func(t *testing.T) {
			g := NewWithT(t)
			s := serve(t, data, nil)
			parent, target := newTarget(t)

			err := (&Fetcher{}).Fetch(context.Background(), s.url(), alg.FromBytes(data).String(), target)
			g.Expect(err).NotTo(HaveOccurred())

			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(target, name))
				g.Expect(err).NotTo(HaveOccurred(), name)
				return string(b)
			}
			g.Expect(read("dir/file")).To(Equal("hello"))
			g.Expect(read("dir/sub/deep/deep.txt")).To(Equal("deep"))
			g.Expect(read("README.md")).To(Equal("readme"))
			g.Expect(read("bin/run.sh")).To(Equal("#!/bin/sh\necho hi\n"))

			exe, err := os.Stat(filepath.Join(target, "bin/run.sh"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(exe.Mode().Perm() & 0o111).NotTo(BeZero())
			plain, err := os.Stat(filepath.Join(target, "README.md"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(plain.Mode().Perm() & 0o111).To(BeZero())

			for name, to := range map[string]string{"link": "dir/file", "dir/sub/up": "../../bin/run.sh"} {
				fi, err := os.Lstat(filepath.Join(target, name))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(fi.Mode() & os.ModeSymlink).NotTo(BeZero())
				g.Expect(os.Readlink(filepath.Join(target, name))).To(Equal(to))
			}
			g.Expect(read("link")).To(Equal("hello"))
			g.Expect(read("dir/sub/up")).To(Equal("#!/bin/sh\necho hi\n"))

			g.Expect(read("hard")).To(Equal("hello"))
			orig, err := os.Stat(filepath.Join(target, "dir/file"))
			g.Expect(err).NotTo(HaveOccurred())
			hard, err := os.Lstat(filepath.Join(target, "hard"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(hard.Mode().IsRegular()).To(BeTrue())
			g.Expect(os.SameFile(orig, hard)).To(BeTrue(), "hard is a hard link to dir/file")

			g.Expect(namesIn(t, parent)).To(ConsistOf("target"))
		})
	}
}

func TestFetchRefusesADigestMismatchBeforeExtracting(t *testing.T) {
	data := goodArchive(t)
	other := buildTarGz(t, file("other", "x"))
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA384, digest.SHA512} {
		t.Run(string(alg), func(t *testing.T) {
			g := NewWithT(t)
			s := serve(t, data, nil)
			_, target := newTarget(t)
			want := alg.FromBytes(other).String()

			err := (&Fetcher{}).Fetch(context.Background(), s.url(), want, target)

			g.Expect(errors.Is(err, ErrDigestMismatch)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(s.url()))
			g.Expect(err.Error()).To(ContainSubstring(want))
			g.Expect(err.Error()).To(ContainSubstring(alg.FromBytes(data).String()))
			g.Expect(namesIn(t, target)).To(BeEmpty(), "nothing is extracted from an unverified download")
		})
	}
}
