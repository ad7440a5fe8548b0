package git

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"

	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// The artifact of a commit's tree read from the Git objects is byte for byte the artifact of a
// checkout of the same commit by the git CLI: the same entries in the same order (names that
// Git and a directory listing order differently among them), exec bits, symlinks left out, an
// empty directory for a submodule, .sourceignore files in their order and scope, .flux.yaml
// kept, spec.ignore last. With the objects in memory and on disk alike.
func TestTreeFSArchiveIsTheCheckoutsArchive(t *testing.T) {
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "tree")
	repo.Commit(t, "Initial commit", map[string]string{"README.md": "# app\n"})
	files := map[string]string{
		"a.txt": "a\n", "a/x.yaml": "x: 1\n", "a-b/y.yaml": "y: 1\n", "a b/z.yaml": "z: 1\n", "a0/w.yaml": "w: 1\n",
		".sourceignore":        "/ignored/\n*.log\n",
		"deploy/.sourceignore": "*.txt\n!keep.txt\n", "deploy/x.txt": "x\n", "deploy/keep.txt": "k\n", "deploy/app.log": "l\n",
		"deploy/-first/.sourceignore": "!*.log\n", "deploy/-first/kept.log": "l\n",
		"ignored/f.yaml": "f\n", "docs/.flux.yaml": "flux\n", "docs/readme.md": "r\n",
		"bin/run.sh": "#!/bin/sh\n", "img/logo.png": "png", ".github/ci.yaml": "ci\n",
		"only-links/.keep": "",
	}
	for name, content := range files {
		p := filepath.Join(repo.WorkDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link.yaml": "a.txt", "dirlink": "a", "only-links/l": "../a.txt", "out": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(repo.WorkDir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(repo.WorkDir, "only-links/.keep")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo.WorkDir, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A repository inside the work tree is added as a submodule (a gitlink to its commit).
	nested := filepath.Join(repo.WorkDir, "vendor", "sub")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	runGit(t, nested, "init", "--quiet")
	runGit(t, nested, "-c", "user.name=x", "-c", "user.email=x@example.com", "commit", "--quiet", "--allow-empty", "-m", "sub")
	sha := repo.Commit(t, "Add a tree", nil)

	checkout := t.TempDir()
	runGit(t, checkout, "clone", "--quiet", repo.Dir, ".")
	runGit(t, checkout, "checkout", "--quiet", sha)
	spec := "/a-b/\n"
	s, err := storage.New(storage.Options{BasePath: filepath.Join(t.TempDir(), "storage")})
	if err != nil {
		t.Fatal(err)
	}
	obj := &metav1.ObjectMeta{Namespace: "default", Name: "tree"}
	want := s.NewArtifactFor("GitRepository", obj, "rev", "cli.tar.gz")
	filter, err := storage.IgnoreFilter(checkout, &spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Archive(&want, checkout, filter); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Expect(tarEntries(t, s.LocalPath(want))).To(Equal([]string{
		".sourceignore -rw-r--r-- /ignored/\n*.log",
		"README.md -rw-r--r-- # app",
		"a/ -rwxr-xr-x ", "a/x.yaml -rw-r--r-- x: 1",
		"a b/ -rwxr-xr-x ", "a b/z.yaml -rw-r--r-- z: 1",
		"a.txt -rw-r--r-- a",
		"a0/ -rwxr-xr-x ", "a0/w.yaml -rw-r--r-- w: 1",
		"bin/ -rwxr-xr-x ", "bin/run.sh -rwxr-xr-x #!/bin/sh",
		"deploy/ -rwxr-xr-x ", "deploy/-first/ -rwxr-xr-x ",
		"deploy/-first/.sourceignore -rw-r--r-- !*.log", "deploy/-first/kept.log -rw-r--r-- l",
		"deploy/.sourceignore -rw-r--r-- *.txt\n!keep.txt", "deploy/keep.txt -rw-r--r-- k",
		"docs/ -rwxr-xr-x ", "docs/.flux.yaml -rw-r--r-- flux", "docs/readme.md -rw-r--r-- r",
		"img/ -rwxr-xr-x ",
		"only-links/ -rwxr-xr-x ",
		"vendor/ -rwxr-xr-x ", "vendor/sub/ -rwxr-xr-x ",
	}), "the archive of the git CLI's checkout")

	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "on disk"}[onDisk], func(t *testing.T) {
			g := NewWithT(t)
			if onDisk {
				defer func(m int64) { inMemoryMax = m }(inMemoryMax)
				inMemoryMax = 1 // every clone is over it
			}
			rev := Revision{Name: DefaultBranch, RefName: plumbing.NewBranchReferenceName(DefaultBranch), Hash: sha}
			dir := filepath.Join(t.TempDir(), "src")
			c, err := Checkout(context.Background(), func() (string, error) { return dir, nil }, Remote{URL: repo.HTTPURL(), Auth: &gitauth.Auth{}}, rev, DefaultMaxCloneSize, false)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Revision.Hash).To(Equal(sha))
			if onDisk {
				g.Expect(dir).To(BeADirectory())
			} else {
				g.Expect(dir).NotTo(BeAnExistingFile())
			}
			filter, err := storage.IgnoreFilterFS(c.Files, &spec)
			g.Expect(err).NotTo(HaveOccurred())
			got := s.NewArtifactFor("GitRepository", obj, "rev", "tree.tar.gz")
			g.Expect(s.ArchiveFS(&got, c.Files, filter)).To(Succeed())

			g.Expect(tarEntries(t, s.LocalPath(got))).To(Equal(tarEntries(t, s.LocalPath(want))))
			g.Expect(got.Digest).To(Equal(want.Digest))
		})
	}
}

// runGit runs the git CLI in dir.
func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// tarEntries lists an artifact's entries in order: name, mode and content.
func tarEntries(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var entries []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, h.Name+" "+fs.FileMode(h.Mode).String()+" "+strings.TrimSpace(string(body)))
	}
}
