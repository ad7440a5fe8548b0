package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The Gitea lister against a real Gitea: every branch across pages, tags with their commits,
// the open pull requests with their head, source branch, title, author and labels, and the
// errors a user sees for a repository the token may not read.
func TestGiteaListsBranchesTagsAndPullRequests(t *testing.T) {
	gitea := testserver.NewGitea(t)
	gitea.CreateOrg(t, "team")
	repo := gitea.CreateRepo(t, "team", "app")
	anaToken := gitea.CreateUser(t, "ana")
	repo.AddCollaborator(t, "ana", "write")

	mainSHA := repo.Commit(t, "main", "config", map[string]string{"app.yaml": "v: 1"})
	// More branches than one page holds (50), in one push.
	refspecs := []string{}
	for i := range giteaPageSize + 5 {
		refspecs = append(refspecs, fmt.Sprintf("%s:refs/heads/feat/%02d", mainSHA, i))
	}
	pushRefs(t, repo, gitea.AdminToken(), refspecs)
	repo.CreateTag(t, "v1.0.0", "main")
	repo.CreateLabel(t, "preview")
	headSHA := repo.As(anaToken).Commit(t, "feat/01", "change", map[string]string{"app.yaml": "v: 2"})
	pr := repo.As(anaToken).OpenPullRequest(t, "feat/01", "main", "Add v2")
	repo.AddLabels(t, pr, "preview")
	closed := repo.As(anaToken).OpenPullRequest(t, "feat/02", "main", "Closed one")
	repo.ClosePullRequest(t, closed)

	l, err := NewGitea(Options{URL: gitea.URL() + "/team/app", Token: anaToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	branches, err := l.List(ctx, Branches)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Item{}
	for _, b := range branches {
		byName[b.Branch] = b
	}
	if len(branches) != giteaPageSize+6 || byName["main"].SHA != mainSHA || byName["feat/01"].SHA != headSHA ||
		byName["feat/54"].ID != inputs.ID("feat/54") {
		t.Fatalf("%d branches: main=%+v feat/01=%+v", len(branches), byName["main"], byName["feat/01"])
	}

	tags, err := l.List(ctx, Tags)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 1 || tags[0].Tag != "v1.0.0" || tags[0].SHA != mainSHA {
		t.Fatalf("tags: %+v", tags)
	}

	prs, err := l.List(ctx, Requests)
	if err != nil {
		t.Fatal(err)
	}
	want := Item{ID: strconv.FormatInt(pr, 10), SHA: headSHA, Branch: "feat/01", Title: "Add v2", Author: "ana", Labels: []string{"preview"}}
	if len(prs) != 1 || fmt.Sprint(prs[0]) != fmt.Sprint(want) {
		t.Fatalf("open pull requests: got %+v, want %+v", prs, want)
	}

	// The same URL with a trailing .git and under the forge's address works alike.
	if l, err := NewGitea(Options{URL: gitea.URL() + "/team/app.git", Token: anaToken}); err != nil {
		t.Fatal(err)
	} else if got, err := l.List(ctx, Tags); err != nil || len(got) != 1 {
		t.Fatalf("with .git: %v %v", got, err)
	}

	t.Run("a private repository and a wrong token", func(t *testing.T) {
		gitea.CreateRepo(t, "team", "secret")
		gitea.API(t, gitea.AdminToken(), http.MethodPatch, "/repos/team/secret", map[string]any{"private": true}, nil)
		for token, want := range map[string]string{
			"":                 "404 Not Found: no such repository, or the token may not read it",
			"0123456789abcdef": "401 Unauthorized: authentication failed: check the token of spec.secretRef",
		} {
			l, _ := NewGitea(Options{URL: gitea.URL() + "/team/secret", Token: token})
			_, err := l.List(ctx, Branches)
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("token %q: got %v, want %q", token, err, want)
			}
		}
	})
}

// pushRefs pushes refspecs to the repository with the git CLI, as the administrator.
func pushRefs(t *testing.T, repo *testserver.GiteaRepo, adminToken string, refspecs []string) {
	t.Helper()
	dir := t.TempDir()
	u, _ := url.Parse(repo.HTTPURL())
	u.User = url.UserPassword(testserver.GiteaAdmin, adminToken)
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, testserver.GitEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
	run("clone", "--quiet", "--bare", u.String(), ".")
	run(append([]string{"push", "--quiet", "origin"}, refspecs...)...)
}

func TestGiteaRefusesURLsThatAreNotRepositories(t *testing.T) {
	for _, u := range []string{"https://gitea.example.com/team", "ftp://gitea.example.com/team/app", "https://user:pw@gitea.example.com/team/app", "https://gitea.example.com/team/app?x=1"} {
		if _, err := NewGitea(Options{URL: u}); err == nil {
			t.Errorf("%s accepted", u)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: the error shows the password: %v", u, err)
		}
	}
}
