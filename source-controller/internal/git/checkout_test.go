package git

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// A clone over --git-max-clone-size fails before it fills the memory or the disk: a pack over
// the limit is stopped while it is fetched, with no more than the limit written; a tree that
// would take the clone over it is refused. Within the limit, the same clone has the commit's
// files. Branches (shallow) and pinned commits (full clone, then the commit) alike, kept in
// memory (nothing on disk) or, over inMemoryMax, on disk.
func TestCheckoutSizeLimit(t *testing.T) {
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "big")
	// Random bytes do not compress: the pack is about as large as the file.
	noise := make([]byte, 3<<20)
	_, _ = rand.Read(noise)
	sha := repo.Commit(t, "Add a big file", map[string]string{"big.bin": string(noise), "app.yaml": "v: 1\n"})

	for _, onDisk := range []bool{false, true} {
		for _, pinned := range []bool{false, true} {
			rev := Revision{Name: DefaultBranch, RefName: plumbing.NewBranchReferenceName(DefaultBranch), Hash: sha, Pinned: pinned}
			checkout := func(limit int64) (string, Commit, error) {
				dir := filepath.Join(t.TempDir(), "src")
				c, err := Checkout(context.Background(), func() (string, error) { return dir, nil }, Remote{URL: repo.HTTPURL(), Auth: &gitauth.Auth{}}, rev, limit, false)
				return dir, c, err
			}
			name := map[bool]string{false: "branch", true: "pinned commit"}[pinned] + map[bool]string{false: " in memory", true: " on disk"}[onDisk]
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				if onDisk {
					defer func(m int64) { inMemoryMax = m }(inMemoryMax)
					inMemoryMax = 64 << 10
				}

				dir, _, err := checkout(1 << 20)
				g.Expect(errors.Is(err, ErrCloneTooLarge)).To(BeTrue(), "%v", err)
				g.Expect(err).To(MatchError("Git clone is more than 1 MiB, over --git-max-clone-size (1 MiB)"))
				g.Expect(treeBytes(t, dir)).To(BeNumerically("<=", 1<<20), "no more than the limit written")

				_, _, err = checkout(5 << 20)
				g.Expect(errors.Is(err, ErrCloneTooLarge)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(MatchRegexp(`^Git clone is 6(\.\d)? MiB, over --git-max-clone-size \(5 MiB\)$`))

				dir, c, err := checkout(8 << 20)
				g.Expect(err).NotTo(HaveOccurred())
				got, err := fs.ReadFile(c.Files, "big.bin")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(noise))
				if onDisk {
					g.Expect(treeBytes(t, dir)).To(BeNumerically(">", 3<<20), "the objects are in dir")
				} else {
					g.Expect(dir).NotTo(BeAnExistingFile(), "nothing is written to disk")
				}
			})
		}
	}
}

// treeBytes is the size of the regular files under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing written
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		n += fi.Size()
		return err
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return n
}
