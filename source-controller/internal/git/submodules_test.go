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

// The objects and files of submodules count in --git-max-clone-size as the repository's own: a
// small repository with a big submodule is over the limit only when its submodules are fetched,
// in memory or on disk.
func TestCheckoutSubmodulesSizeLimit(t *testing.T) {
	server := testserver.NewGitServer(t, testserver.Options{})
	big := server.NewRepo(t, "big")
	noise := make([]byte, 3<<20)
	_, _ = rand.Read(noise)
	big.Commit(t, "big", map[string]string{"big.bin": string(noise)})
	app := server.NewRepo(t, "app")
	app.Commit(t, "app", map[string]string{"app.yaml": "a"})
	sha := app.AddSubmodule(t, "vendor/big", "../big.git")
	rev := Revision{Name: DefaultBranch, RefName: plumbing.NewBranchReferenceName(DefaultBranch), Hash: sha}

	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "on disk"}[onDisk], func(t *testing.T) {
			g := NewWithT(t)
			if onDisk {
				defer func(m int64) { inMemoryMax = m }(inMemoryMax)
				inMemoryMax = 64 << 10
			}
			checkout := func(limit int64, recurse bool) (Commit, error) {
				dir := filepath.Join(t.TempDir(), "src")
				return Checkout(context.Background(), func() (string, error) { return dir, nil },
					Remote{URL: app.HTTPURL(), Auth: &gitauth.Auth{}}, rev, limit, recurse)
			}
			c, err := checkout(1<<20, false)
			g.Expect(err).NotTo(HaveOccurred())
			entries, err := fs.ReadDir(c.Files, "vendor/big")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entries).To(BeEmpty(), "without recursion, an empty directory")

			_, err = checkout(1<<20, true)
			g.Expect(errors.Is(err, ErrCloneTooLarge)).To(BeTrue(), "%v", err)

			c, err = checkout(16<<20, true)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := fs.ReadFile(c.Files, "vendor/big/big.bin")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(noise))
		})
	}
}

// Relative submodule URLs resolve against the repository's URL; absolute ones must keep its
// scheme, for its credentials to apply.
func TestSubmoduleURL(t *testing.T) {
	for _, tc := range []struct{ parent, raw, want, err string }{
		{"https://git.example.com/org/app.git", "../lib.git", "https://git.example.com/org/lib.git", ""},
		{"https://git.example.com/org/app", "./sub", "https://git.example.com/org/app/sub", ""},
		{"ssh://git@host:2222/org/app.git", "../../other/lib.git", "ssh://git@host:2222/other/lib.git", ""},
		{"https://git.example.com/org/app.git", "https://mirror.example.com/lib.git", "https://mirror.example.com/lib.git", ""},
		{"https://git.example.com/org/app.git", "ssh://git@host/lib.git", "", "URL 'ssh://git@host/lib.git' is not https as the repository's: its credentials would not apply"},
		{"https://git.example.com/org/app.git", "git@host:lib.git", "", "URL 'git@host:lib.git' is neither relative nor an http, https or ssh URL"},
	} {
		got, err := submoduleURL(tc.parent, tc.raw)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("submoduleURL(%q, %q): error %v, want %q", tc.parent, tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("submoduleURL(%q, %q) = %q, %v; want %q", tc.parent, tc.raw, got, err, tc.want)
		}
	}
}
