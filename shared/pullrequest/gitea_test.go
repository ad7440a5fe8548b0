package pullrequest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/contracttest"

	"github.com/sluice-gitops/sluice/shared/pullrequest"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// giteaClient is the client the tests pass, as a controller passes its own.
func giteaClient() *http.Client { return &http.Client{Timeout: 30 * time.Second} }

// giteaPull is what the tests read of a pull request through Gitea's API.
type giteaPull struct {
	Number int64  `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

// openPulls lists the open pull requests of team/app from head, through Gitea's API.
func openPulls(t *testing.T, gitea *testserver.Gitea, head string) []giteaPull {
	t.Helper()
	var all, out []giteaPull
	gitea.API(t, gitea.AdminToken(), http.MethodGet, "/repos/team/app/pulls?state=open&limit=50", nil, &all)
	for _, p := range all {
		if p.Head.Ref == head {
			out = append(out, p)
		}
	}
	return out
}

// A controller pushes a branch and calls Ensure, pushes again and calls Ensure again: one pull
// request, updated; once it is closed the next Ensure opens another one, which is merged.
func TestGiteaEnsureOpensThenUpdatesOnePullRequest(t *testing.T) {
	g := NewWithT(t)
	gitea := testserver.NewGitea(t)
	gitea.CreateOrg(t, "team")
	repo := gitea.CreateRepo(t, "team", "app")
	botToken := gitea.CreateUser(t, "bot")
	repo.AddCollaborator(t, "bot", "write")
	repo.CreateLabel(t, "automated")
	const branch = "sluice/image-updates/app"

	first := pushBranch(t, repo, "bot", botToken, branch, "image: app:1.0.1\n")
	f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.Gitea, RepoURL: repo.HTTPURL(), Token: botToken, HTTPClient: giteaClient()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := t.Context()

	pr, created, err := f.Ensure(ctx, pullrequest.Request{
		Head: branch, Base: "main", Title: "Update app to 1.0.1", Body: "Automated image update.",
		// "unknown" does not exist: Gitea adds the labels it has.
		Labels: []string{"automated", "unknown"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(pr).To(Equal(pullrequest.PullRequest{
		Number: pr.Number, URL: fmt.Sprintf("%s/team/app/pulls/%d", gitea.URL(), pr.Number), State: pullrequest.Open,
		Head: branch, Base: "main", HeadSHA: first,
	}))
	g.Expect(pr.Number).To(BeNumerically(">", 0))
	open := openPulls(t, gitea, branch)
	g.Expect(open).To(HaveLen(1))
	g.Expect(open[0].Labels).To(HaveLen(1))
	g.Expect(open[0].Labels[0].Name).To(Equal("automated"))

	// A second push to the same branch, a new title and body: the same pull request.
	second := pushBranch(t, repo, "bot", botToken, branch, "image: app:1.0.2\n")
	again, created, err := f.Ensure(ctx, pullrequest.Request{
		Head: branch, Base: "main", Title: "Update app to 1.0.2", Body: "Automated image update, again.",
		Labels: []string{"automated"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(again.Number).To(Equal(pr.Number))
	g.Expect(again.HeadSHA).To(Equal(second))
	g.Expect(again.State).To(Equal(pullrequest.Open))
	open = openPulls(t, gitea, branch)
	g.Expect(open).To(HaveLen(1), "exactly one open pull request for the head")
	g.Expect(open[0].Number).To(Equal(pr.Number))
	g.Expect(open[0].Title).To(Equal("Update app to 1.0.2"))
	g.Expect(open[0].Body).To(Equal("Automated image update, again."))

	// Nothing new: the same pull request, untouched.
	same, created, err := f.Ensure(ctx, pullrequest.Request{Head: branch, Base: "main", Title: "Update app to 1.0.2", Body: "Automated image update, again."})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(same).To(Equal(again))

	got, err := f.Get(ctx, pr.Number)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(again))

	// Closed without merging.
	repo.ClosePullRequest(t, pr.Number)
	got, err = f.Get(ctx, pr.Number)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.State).To(Equal(pullrequest.Closed))

	// A closed pull request is not reopened: the next Ensure opens another one.
	next, created, err := f.Ensure(ctx, pullrequest.Request{Head: branch, Base: "main", Title: "Update app to 1.0.2", Body: "Automated image update."})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(next.Number).NotTo(Equal(pr.Number))
	g.Expect(openPulls(t, gitea, branch)).To(HaveLen(1))

	// Merged.
	repo.MergePullRequest(t, next.Number)
	got, err = f.Get(ctx, next.Number)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.State).To(Equal(pullrequest.Merged))
	got, err = f.Get(ctx, pr.Number)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.State).To(Equal(pullrequest.Closed), "closed stays closed, not merged")
}

// The errors a user sees: a refused token, a user without write access, a missing branch, a
// pull request that does not exist, and a request that makes no sense; never the token.
func TestGiteaErrors(t *testing.T) {
	gitea := testserver.NewGitea(t)
	gitea.CreateOrg(t, "team")
	repo := gitea.CreateRepo(t, "team", "app")
	botToken := gitea.CreateUser(t, "bot")
	repo.AddCollaborator(t, "bot", "write")
	readOnlyToken := readOnlyToken(t, gitea, "bot")
	pushBranch(t, repo, "bot", botToken, "feature", "v: 2\n")
	request := pullrequest.Request{Head: "feature", Base: "main", Title: "Feature"}
	forge := func(token string) pullrequest.Forge {
		f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.Gitea, RepoURL: gitea.URL() + "/team/app", Token: token, HTTPClient: giteaClient()})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("a bad token", func(t *testing.T) {
		g := NewWithT(t)
		const bad = "0123456789abcdef0123456789abcdef01234567"
		_, _, err := forge(bad).Ensure(t.Context(), request)
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`looking for an open pull request from "feature" into "main" of `+gitea.URL()+"/team/app"),
			ContainSubstring("Gitea answered HTTP 401 Unauthorized"),
			ContainSubstring("the token is wrong, expired or revoked: replace it"))))
		g.Expect(err.Error()).NotTo(ContainSubstring(bad))
		var apiErr *pullrequest.APIError
		g.Expect(errors.As(err, &apiErr)).To(BeTrue())
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusUnauthorized))
		g.Expect(openPulls(t, gitea, "feature")).To(BeEmpty())
	})

	t.Run("a token that may only read", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := forge(readOnlyToken).Ensure(t.Context(), request)
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`opening a pull request from "feature" into "main"`),
			ContainSubstring("Gitea answered HTTP 403 Forbidden"),
			ContainSubstring("the token cannot open or update pull requests of the repository"))))
		g.Expect(err.Error()).NotTo(ContainSubstring(readOnlyToken))
		g.Expect(openPulls(t, gitea, "feature")).To(BeEmpty())
	})

	t.Run("a branch that was not pushed", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := forge(botToken).Ensure(t.Context(), pullrequest.Request{Head: "never-pushed", Base: "main", Title: "Nothing"})
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`opening a pull request from "never-pushed" into "main"`),
			ContainSubstring("HTTP 404 Not Found"), ContainSubstring("that both branches exist"))))
	})

	t.Run("no such pull request", func(t *testing.T) {
		g := NewWithT(t)
		_, err := forge(botToken).Get(t.Context(), 999)
		g.Expect(err).To(MatchError(And(ContainSubstring("reading pull request #999 of "+gitea.URL()+"/team/app"),
			ContainSubstring("HTTP 404 Not Found"), ContainSubstring("that the pull request exists"))))
	})

	t.Run("requests that make no sense", func(t *testing.T) {
		for _, req := range []pullrequest.Request{
			{Head: "main", Base: "main", Title: "Same branch"},
			{Head: "feature", Title: "No base"},
			{Head: "feature", Base: "main"},
			{Head: "fork:feature", Base: "main", Title: "A fork's branch"},
		} {
			g := NewWithT(t)
			_, _, err := forge(botToken).Ensure(t.Context(), req)
			g.Expect(errors.Is(err, pullrequest.ErrInvalid)).To(BeTrue(), "%+v: %v", req, err)
		}
		NewWithT(t).Expect(openPulls(t, gitea, "feature")).To(BeEmpty())
	})
}

// The forms of a repository URL, and a Gitea under a sub-path, select the API of the forge they
// name: a transport sends the requests to the test Gitea, recording the address meant.
func TestGiteaRepositoryURLs(t *testing.T) {
	gitea := testserver.NewGitea(t)
	gitea.CreateOrg(t, "team")
	repo := gitea.CreateRepo(t, "team", "app")
	botToken := gitea.CreateUser(t, "bot")
	repo.AddCollaborator(t, "bot", "write")
	pushBranch(t, repo, "bot", botToken, "feature", "v: 2\n")
	n := repo.As(botToken).OpenPullRequest(t, "feature", "main", "Feature")
	giteaURL, _ := url.Parse(gitea.URL())

	for _, tc := range []struct {
		repoURL, apiURL, strip, want string
	}{
		{repoURL: "https://gitea.example.com/team/app", want: "https://gitea.example.com/api/v1/repos/team/app/pulls/%d"},
		{repoURL: "https://gitea.example.com/team/app.git/", want: "https://gitea.example.com/api/v1/repos/team/app/pulls/%d"},
		{repoURL: "ssh://git@gitea.example.com:2222/team/app.git", want: "https://gitea.example.com/api/v1/repos/team/app/pulls/%d"},
		{repoURL: "git@gitea.example.com:team/app.git", want: "https://gitea.example.com/api/v1/repos/team/app/pulls/%d"},
		// A Gitea under a sub-path keeps it.
		{repoURL: "https://example.com/git/team/app.git", strip: "/git", want: "https://example.com/git/api/v1/repos/team/app/pulls/%d"},
		// An API URL given wins, with or without /api/v1.
		{repoURL: "git@ssh.example.com:team/app.git", apiURL: "https://gitea-api.example.com", want: "https://gitea-api.example.com/api/v1/repos/team/app/pulls/%d"},
		{repoURL: "git@ssh.example.com:team/app.git", apiURL: "https://example.com/git/api/v1/", strip: "/git", want: "https://example.com/git/api/v1/repos/team/app/pulls/%d"},
	} {
		t.Run(tc.repoURL+" "+tc.apiURL, func(t *testing.T) {
			g := NewWithT(t)
			redirect := contracttest.NewRedirectTo(giteaURL, tc.strip, http.DefaultTransport)
			f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.Gitea, RepoURL: tc.repoURL, APIURL: tc.apiURL, Token: botToken, HTTPClient: redirect.Client()})
			g.Expect(err).NotTo(HaveOccurred())
			pr, err := f.Get(t.Context(), n)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pr.Number).To(Equal(n))
			g.Expect(pr.Head).To(Equal("feature"))
			g.Expect(redirect.Targets()).To(Equal([]string{fmt.Sprintf(tc.want, n)}))
		})
	}
}

// readOnlyToken creates a token of user with the read:repository scope only. Gitea makes tokens
// for a user authenticated by password: the administrator sets one first.
func readOnlyToken(t *testing.T, gitea *testserver.Gitea, user string) string {
	t.Helper()
	const password = "read-only-token-test-password"
	gitea.API(t, gitea.AdminToken(), http.MethodPatch, "/admin/users/"+user, map[string]any{
		"login_name": user, "source_id": 0, "password": password, "must_change_password": false,
	}, nil)
	body := strings.NewReader(`{"name":"read-only","scopes":["read:repository"]}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gitea.URL()+"/api/v1/users/"+user+"/tokens", body)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := giteaClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusCreated || tok.SHA1 == "" {
		t.Fatalf("gitea: creating a read-only token of %s: %d %v", user, resp.StatusCode, err)
	}
	return tok.SHA1
}

// pushBranch commits content to app.yaml on branch (created from main when missing) with the git
// CLI and pushes it over HTTP as user, as a controller pushes; it returns the commit's SHA.
func pushBranch(t *testing.T, repo *testserver.GiteaRepo, user, token, branch, content string) string {
	t.Helper()
	dir := t.TempDir()
	u, _ := url.Parse(repo.HTTPURL())
	u.User = url.UserPassword(user, token)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, testserver.GitEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, strings.ReplaceAll(string(out), token, "[token]"))
		}
		return strings.TrimSpace(string(out))
	}
	run("clone", "--quiet", u.String(), ".")
	if run("ls-remote", "--heads", "origin", branch) != "" {
		run("checkout", "--quiet", branch)
	} else {
		run("checkout", "--quiet", "-b", branch)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "app.yaml")
	run("-c", "user.name="+user, "-c", "user.email="+user+"@example.com", "commit", "--quiet", "-m", "Update app.yaml")
	run("push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	return run("rev-parse", "HEAD")
}
