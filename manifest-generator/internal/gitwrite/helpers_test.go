package gitwrite_test

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

const (
	botName  = "Sluice Bot"
	botEmail = "bot@sluice.invalid"
)

// httpRepo starts a smart-HTTP server with basic auth and a repository with two files on
// master; it returns the repository, its first commit and options that reach it.
func httpRepo(t *testing.T) (*testserver.Repo, string, gitwrite.Options) {
	t.Helper()
	srv := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	repo := srv.NewRepo(t, "fleet")
	base := repo.Commit(t, "Initial commit", map[string]string{
		"apps/podinfo.yaml": "image: podinfo:6.0.0\n", "apps/redis.yaml": "image: redis:7.0.0\n",
	})
	auth := authFor(t, repo.HTTPURL(), map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})
	return repo, base, options(t, repo.HTTPURL(), auth)
}

func authFor(t *testing.T, rawURL string, data map[string][]byte) *gitauth.Auth {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := gitauth.AuthFromSecret(u, data, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return auth
}

func options(t *testing.T, url string, auth *gitauth.Auth) gitwrite.Options {
	return gitwrite.Options{
		URL: url, Auth: auth, Branch: "master",
		Author:  gitwrite.Author{Name: botName, Email: botEmail},
		Message: "Update podinfo to 6.1.0",
		Dir:     t.TempDir(),
	}
}

// writeFiles returns a change that writes the files into the work tree ("" deletes).
func writeFiles(files map[string]string) func(dir string) error {
	return func(dir string) error {
		for name, content := range files {
			path := filepath.Join(dir, filepath.FromSlash(name))
			if content == "" {
				if err := os.Remove(path); err != nil {
					return err
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

// gitIn runs the git CLI in dir (the bare repository of the server, or a clone) and returns
// its trimmed output, failing the test when git fails.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitOut(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testserver.GitEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// serverHead is the commit of master in the server's bare repository.
func serverHead(t *testing.T, repo *testserver.Repo) string {
	t.Helper()
	return gitIn(t, repo.Dir, "rev-parse", "refs/heads/master")
}

// installHook writes an executable server-side hook into the bare repository.
func installHook(t *testing.T, repo *testserver.Repo, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo.Dir, "hooks", name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// emptyDir fails unless dir holds nothing: Push removes its clones.
func emptyDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
