package git

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// A shallow checkout of 5,000 small files over loopback HTTP, without a size limit and with
// one (the budget on every write and the tree added up first), then every file read from its
// tree, as the archive reads them.
func BenchmarkCheckout5kFiles(b *testing.B) {
	server := testserver.NewGitServer(b, testserver.Options{})
	repo := server.NewRepo(b, "bench")
	files := map[string]string{}
	for i := range 5000 {
		files[fmt.Sprintf("deploy/app-%02d/cm-%04d.yaml", i%50, i)] = fmt.Sprintf("kind: ConfigMap\nmetadata:\n  name: cm-%d\n", i)
	}
	sha := repo.Commit(b, "Initial commit", files)
	rev := Revision{Name: DefaultBranch, RefName: plumbing.NewBranchReferenceName(DefaultBranch), Hash: sha}
	for _, limit := range []int64{0, DefaultMaxCloneSize} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				dir, err := os.MkdirTemp("", "checkout-bench-*")
				if err != nil {
					b.Fatal(err)
				}
				c, err := Checkout(context.Background(), func() (string, error) { return dir + "/src", nil }, Remote{URL: repo.HTTPURL(), Auth: &gitauth.Auth{}}, rev, limit, false)
				if err != nil {
					b.Fatal(err)
				}
				if err := readAll(c.Files); err != nil {
					b.Fatal(err)
				}
				_ = os.RemoveAll(dir)
			}
		})
	}
}

// readAll reads every regular file of fsys.
func readAll(fsys fs.FS) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
}
