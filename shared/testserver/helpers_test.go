package testserver_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// gitCLI runs the git CLI as a client in dir with testserver.GitEnv plus env, and returns its
// combined output: tests assert on git's own messages.
func gitCLI(t testing.TB, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testserver.GitEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// goGitClone clones url into memory with go-git.
func goGitClone(url string, auth transport.AuthMethod, ca []byte) (*git.Repository, error) {
	return git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{URL: url, Auth: auth, CABundle: ca})
}

// lsRemote lists the remote's references with go-git (what `git ls-remote` prints), peeled
// tags included as "refs/tags/x^{}", as name -> hash ("ref: <target>" for a symbolic ref).
func lsRemote(url string, auth transport.AuthMethod) (map[string]string, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.List(&git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range refs {
		if r.Type() == plumbing.SymbolicReference {
			out[r.Name().String()] = "ref: " + r.Target().String()
			continue
		}
		out[r.Name().String()] = r.Hash().String()
	}
	return out, nil
}

// readFile reads a file of a go-git clone's work tree.
func readFile(t testing.TB, repo *git.Repository, name string) string {
	t.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := wt.Filesystem.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// writeTemp writes data to a 0600 file in a temporary directory (ssh refuses keys others can
// read) and returns its path.
func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
