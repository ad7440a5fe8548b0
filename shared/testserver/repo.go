package testserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// AuthorName and AuthorEmail sign every commit and tag the helpers make (author and
// committer), whatever the machine's git configuration says.
const (
	AuthorName  = "Sluice Test"
	AuthorEmail = "test@sluice.invalid"
)

// Repo is a bare repository served by a GitServer plus a work tree that fills it: changes are
// committed in the work tree with the git CLI and pushed to the bare repository.
type Repo struct {
	// Name is the repository's path under the server root, ending in ".git" ("app.git").
	Name string
	// Dir is the bare repository's directory.
	Dir string
	// WorkDir is the work tree's directory.
	WorkDir string
	// Date, when set, makes history reproducible: the n-th commit or annotated tag is dated
	// Date plus n seconds (author and committer alike), so the same calls give the same SHAs.
	// When zero, git uses the clock.
	Date time.Time
	// Author, when its Email is set, authors the next commits instead of AuthorName and
	// AuthorEmail (the committer stays the fixed identity), as a colleague's push would.
	Author Identity

	server *GitServer
	ticks  int
}

// NewRepo creates an empty bare repository named name (".git" is appended when missing;
// "org/app" nests) under the server root, with a work tree whose origin it is, on branch
// master.
func (s *GitServer) NewRepo(t testing.TB, name string) *Repo {
	t.Helper()
	if !strings.HasSuffix(name, ".git") {
		name += ".git"
	}
	if filepath.IsAbs(name) || strings.Contains("/"+name+"/", "/../") {
		t.Fatalf("testserver: repository name %q must be a relative path under the root", name)
	}
	r := &Repo{
		Name:    name,
		Dir:     filepath.Join(s.root, filepath.FromSlash(name)),
		WorkDir: t.TempDir(),
		server:  s,
	}
	if _, err := os.Stat(r.Dir); err == nil {
		t.Fatalf("testserver: repository %q already exists", name)
	}
	runGit(t, s.root, nil, "-c", "init.defaultBranch=master", "init", "--quiet", "--bare", r.Dir)
	runGit(t, r.WorkDir, nil, "-c", "init.defaultBranch=master", "init", "--quiet")
	runGit(t, r.WorkDir, nil, "remote", "add", "origin", r.Dir)
	return r
}

// Identity is a Git author.
type Identity struct{ Name, Email string }

// HTTPURL is the repository's HTTP(S) clone URL.
func (r *Repo) HTTPURL() string { return r.server.HTTPURL() + "/" + r.Name }

// SSHURL is the repository's SSH clone URL, "ssh://git@127.0.0.1:port/<name>".
func (r *Repo) SSHURL() string { return r.server.SSHURL() + "/" + r.Name }

// Commit writes files into the work tree (paths are slash-separated and relative; "" content
// deletes the file), commits everything on the current branch with msg, pushes the branch and
// returns the commit's SHA. A commit with no change is still made.
func (r *Repo) Commit(t testing.TB, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(r.WorkDir, filepath.FromSlash(name))
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			t.Fatalf("testserver: file %q must be a relative path inside the work tree", name)
		}
		if content == "" {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatalf("testserver: deleting %s: %v", name, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("testserver: %v", err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatalf("testserver: writing %s: %v", name, err)
		}
	}
	r.git(t, "add", "--all")
	r.git(t, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", msg)
	r.git(t, "push", "--quiet", "origin", "HEAD:refs/heads/"+r.CurrentBranch(t))
	return r.Head(t)
}

// Branch creates branch name at HEAD, checks it out and pushes it. It needs a commit first.
func (r *Repo) Branch(t testing.TB, name string) {
	t.Helper()
	r.git(t, "checkout", "--quiet", "-b", name)
	r.git(t, "push", "--quiet", "origin", "HEAD:refs/heads/"+name)
}

// Checkout switches the work tree to an existing branch; later commits go there.
func (r *Repo) Checkout(t testing.TB, branch string) {
	t.Helper()
	r.git(t, "checkout", "--quiet", branch)
}

// Tag tags HEAD with name, annotated (with the message "name") or lightweight, pushes the tag
// and returns the SHA of the commit it points to.
func (r *Repo) Tag(t testing.TB, name string, annotated bool) string {
	t.Helper()
	if annotated {
		r.git(t, "tag", "--annotate", "--message", name, name)
	} else {
		r.git(t, "tag", name)
	}
	r.git(t, "push", "--quiet", "origin", "refs/tags/"+name)
	return r.Head(t)
}

// Head returns the SHA of the work tree's HEAD commit.
func (r *Repo) Head(t testing.TB) string {
	t.Helper()
	return runGit(t, r.WorkDir, nil, "rev-parse", "HEAD")
}

// CurrentBranch returns the branch checked out in the work tree.
func (r *Repo) CurrentBranch(t testing.TB) string {
	t.Helper()
	return runGit(t, r.WorkDir, nil, "symbolic-ref", "--short", "HEAD")
}

// git runs a git command in the work tree with the fixed identity, and with the next date when
// Date is set.
func (r *Repo) git(t testing.TB, args ...string) {
	t.Helper()
	env := []string{
		"GIT_AUTHOR_NAME=" + AuthorName, "GIT_AUTHOR_EMAIL=" + AuthorEmail,
		"GIT_COMMITTER_NAME=" + AuthorName, "GIT_COMMITTER_EMAIL=" + AuthorEmail,
	}
	if r.Author.Email != "" {
		env[0], env[1] = "GIT_AUTHOR_NAME="+r.Author.Name, "GIT_AUTHOR_EMAIL="+r.Author.Email
	}
	if !r.Date.IsZero() && (args[0] == "commit" || args[0] == "tag" && args[1] == "--annotate") {
		// Git's internal format: seconds since the epoch and the zone, unambiguous to parse.
		d := r.Date.Add(time.Duration(r.ticks) * time.Second)
		date := fmt.Sprintf("@%d %s", d.Unix(), d.Format("-0700"))
		env = append(env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		r.ticks++
	}
	runGit(t, r.WorkDir, env, args...)
}
