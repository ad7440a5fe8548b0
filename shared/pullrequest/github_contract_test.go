// Contract tests of the GitHub client against recorded responses from GitHub's REST API
// documentation (testdata/contract/github, each file naming the page it comes from). GitHub
// cannot be reached from the machines that run these tests, so this is the one place in the
// package where a recorded exchange stands in for a server: the test server checks each request
// the official client (go-github) sends (method, path, query, token and JSON body), serves the
// documented bodies, and the tests assert the pull requests and errors the Forge makes of them.
//
// The fixtures, the request log and the redirecting transport are shared/contracttest's; the
// helpers shared with gitlab_contract_test.go and gitea_test.go are at the end of this file.
package pullrequest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/contracttest"

	"github.com/sluice-gitops/sluice/shared/pullrequest"
)

const gitHubToken = "ghp_contract-test-token-0123456789"

// gitHubAPI is a test server answering as GitHub's REST API under prefix ("/api/v3" for a
// GitHub Enterprise Server, "" for api.github.com) with the recorded responses.
type gitHubAPI struct {
	t      *testing.T
	srv    *httptest.Server
	prefix string
	log    contracttest.RequestLog
	// routes maps "METHOD path" (path after the prefix) to its handler.
	routes map[string]http.HandlerFunc
}

func newGitHubAPI(t *testing.T, prefix string) *gitHubAPI {
	api := &gitHubAPI{t: t, prefix: prefix, routes: map[string]http.HandlerFunc{}}
	api.srv = httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(api.srv.Close)
	return api
}

func (api *gitHubAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.log.Add(r)
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), api.prefix)
	h := api.routes[r.Method+" "+path]
	if !ok || h == nil {
		api.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		contracttest.WriteJSON(w, http.StatusNotFound, []byte(`{"message":"Not Found"}`))
		return
	}
	if !strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.github") {
		api.t.Errorf("%s %s: Accept is %q, GitHub documents application/vnd.github+json", r.Method, path, r.Header.Get("Accept"))
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+gitHubToken {
		api.t.Errorf("%s %s: Authorization is %q, want the token as a Bearer token", r.Method, path, got)
	}
	h(w, r)
}

// answer serves the fixture's response with status, after checking the query (want) and, for a
// request with a body, its JSON (wantBody).
func (api *gitHubAPI) answer(route string, status int, response json.RawMessage, want neturl.Values, wantBody string) {
	api.routes[route] = func(w http.ResponseWriter, r *http.Request) {
		checkRequest(api.t, r, want, wantBody)
		contracttest.WriteJSON(w, status, response)
	}
}

func (api *gitHubAPI) repoURL() string { return api.srv.URL + "/octocat/Hello-World" }

func (api *gitHubAPI) forge(t *testing.T) pullrequest.Forge {
	t.Helper()
	f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.GitHub, RepoURL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// listQuery is the query of the search for the open pull request from octocat's new-topic into
// master.
var listQuery = neturl.Values{"state": {"open"}, "head": {"octocat:new-topic"}, "base": {"master"}, "per_page": {"100"}}

var releaseRequest = pullrequest.Request{
	Head: "new-topic", Base: "master", Title: "Update the images", Body: "Automated image update.",
	Labels: []string{"bug", "enhancement"},
}

func TestContractGitHubEnsureOpensAPullRequest(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3")
	api.answer("GET /repos/octocat/Hello-World/pulls", http.StatusOK, []byte("[]"), listQuery, "")
	api.answer("POST /repos/octocat/Hello-World/pulls", http.StatusCreated, contracttest.LoadFixture(t, "github/create-pull-request").Response, nil,
		`{"title":"Update the images","head":"new-topic","base":"master","body":"Automated image update."}`)
	api.answer("POST /repos/octocat/Hello-World/issues/1347/labels", http.StatusOK, contracttest.LoadFixture(t, "github/add-labels-to-an-issue").Response, nil,
		`["bug","enhancement"]`)

	pr, created, err := api.forge(t).Ensure(t.Context(), releaseRequest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(pr).To(Equal(pullrequest.PullRequest{
		Number: 1347, URL: "https://github.com/octocat/Hello-World/pull/1347", State: pullrequest.Open,
		Head: "new-topic", Base: "master", HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
	}))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v3/repos/octocat/Hello-World/pulls?base=master&head=octocat%3Anew-topic&per_page=100&state=open",
		"POST /api/v3/repos/octocat/Hello-World/pulls",
		"POST /api/v3/repos/octocat/Hello-World/issues/1347/labels",
	}))
}

func TestContractGitHubEnsureUpdatesTheOpenPullRequest(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3")
	api.answer("GET /repos/octocat/Hello-World/pulls", http.StatusOK, contracttest.LoadFixture(t, "github/list-pull-requests").Response, listQuery, "")
	api.answer("PATCH /repos/octocat/Hello-World/pulls/1347", http.StatusOK, contracttest.LoadFixture(t, "github/update-pull-request").Response, nil,
		`{"title":"Update the images","body":"Automated image update."}`)
	f := api.forge(t)

	// The open pull request from new-topic into master is updated, not opened again, and keeps
	// its labels.
	pr, created, err := f.Ensure(t.Context(), releaseRequest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(pr.Number).To(BeEquivalentTo(1347))
	g.Expect(pr.State).To(Equal(pullrequest.Open))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v3/repos/octocat/Hello-World/pulls?base=master&head=octocat%3Anew-topic&per_page=100&state=open",
		"PATCH /api/v3/repos/octocat/Hello-World/pulls/1347",
	}))

	// Already as asked: nothing is written.
	same := releaseRequest
	same.Title, same.Body = "Amazing new feature", "Please pull these awesome changes in!"
	pr, created, err = f.Ensure(t.Context(), same)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(pr.Number).To(BeEquivalentTo(1347))
	g.Expect(api.log.All()).To(HaveLen(3))
}

func TestContractGitHubGetTellsMergedFromClosed(t *testing.T) {
	documented := contracttest.LoadFixture(t, "github/get-pull-request").Response
	for _, tc := range []struct {
		name   string
		fields map[string]any
		want   pullrequest.State
	}{
		{name: "as documented", want: pullrequest.Open},
		{name: "closed", fields: map[string]any{"state": "closed", "merged": false}, want: pullrequest.Closed},
		{name: "merged", fields: map[string]any{"state": "closed", "merged": true}, want: pullrequest.Merged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			api := newGitHubAPI(t, "/api/v3")
			api.answer("GET /repos/octocat/Hello-World/pulls/1347", http.StatusOK, withFields(t, documented, tc.fields), nil, "")
			pr, err := api.forge(t).Get(t.Context(), 1347)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pr).To(Equal(pullrequest.PullRequest{
				Number: 1347, URL: "https://github.com/octocat/Hello-World/pull/1347", State: tc.want,
				Head: "new-topic", Base: "master", HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
			}))
		})
	}
}

func TestContractGitHubErrors(t *testing.T) {
	t.Run("a refused token", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3")
		api.answer("GET /repos/octocat/Hello-World/pulls", http.StatusUnauthorized, contracttest.LoadFixture(t, "github/unauthorized").Response, nil, "")
		_, _, err := api.forge(t).Ensure(t.Context(), releaseRequest)
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`looking for an open pull request from "new-topic" into "master" of `+api.repoURL()),
			ContainSubstring(`GitHub answered HTTP 401 Unauthorized ("Bad credentials"): the token is wrong, expired or revoked: replace it`))))
		var apiErr *pullrequest.APIError
		g.Expect(errors.As(err, &apiErr)).To(BeTrue())
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusUnauthorized))
		g.Expect(err.Error()).NotTo(ContainSubstring(gitHubToken))
		g.Expect(errors.Is(err, pullrequest.ErrInvalid)).To(BeFalse(), "a token can be replaced: the controller retries")
	})

	t.Run("a token without the permission", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3")
		api.answer("GET /repos/octocat/Hello-World/pulls", http.StatusOK, []byte("[]"), listQuery, "")
		api.answer("POST /repos/octocat/Hello-World/pulls", http.StatusForbidden, contracttest.LoadFixture(t, "github/forbidden").Response, nil, "")
		_, _, err := api.forge(t).Ensure(t.Context(), releaseRequest)
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`opening a pull request from "new-topic" into "master"`),
			ContainSubstring(`HTTP 403 Forbidden ("Resource not accessible by personal access token")`),
			ContainSubstring(`the token cannot open or update pull requests of the repository: give it "Pull requests: Read and write"`))))
		g.Expect(err.Error()).NotTo(ContainSubstring("documentation_url"))
	})

	t.Run("no such pull request", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3")
		api.answer("GET /repos/octocat/Hello-World/pulls/1", http.StatusNotFound, contracttest.LoadFixture(t, "github/not-found").Response, nil, "")
		_, err := api.forge(t).Get(t.Context(), 1)
		g.Expect(err).To(MatchError(And(ContainSubstring("reading pull request #1 of "+api.repoURL()),
			ContainSubstring(`HTTP 404 Not Found ("Not Found")`), ContainSubstring("that the pull request exists"))))
	})

	t.Run("labels refused", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3")
		api.answer("GET /repos/octocat/Hello-World/pulls", http.StatusOK, []byte("[]"), listQuery, "")
		api.answer("POST /repos/octocat/Hello-World/pulls", http.StatusCreated, contracttest.LoadFixture(t, "github/create-pull-request").Response, nil, "")
		api.answer("POST /repos/octocat/Hello-World/issues/1347/labels", http.StatusForbidden, contracttest.LoadFixture(t, "github/forbidden").Response, nil, "")
		pr, created, err := api.forge(t).Ensure(t.Context(), releaseRequest)
		var labelsErr *pullrequest.LabelsError
		g.Expect(errors.As(err, &labelsErr)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("pull request #1347 was opened, but its labels were not added")))
		g.Expect(created).To(BeTrue())
		g.Expect(pr.Number).To(BeEquivalentTo(1347))
		g.Expect(labelsErr.PullRequest).To(Equal(pr))
	})
}

func TestContractGitHubAPIAddresses(t *testing.T) {
	documented := contracttest.LoadFixture(t, "github/get-pull-request").Response
	for _, tc := range []struct {
		repoURL, apiURL string
		prefix          string // where the test server answers
		want            string // the API address the client asks
	}{
		// github.com's API is api.github.com, without /api/v3, for every form of its URLs.
		{repoURL: "https://github.com/octocat/Hello-World", want: "https://api.github.com/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "https://www.github.com/octocat/Hello-World.git", want: "https://api.github.com/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "ssh://git@github.com/octocat/Hello-World.git", want: "https://api.github.com/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "git@github.com:octocat/Hello-World.git", want: "https://api.github.com/repos/octocat/Hello-World/pulls/1347"},
		// Any other host is a GitHub Enterprise Server, whose API is under /api/v3.
		{repoURL: "https://github.example.com/octocat/Hello-World", prefix: "/api/v3", want: "https://github.example.com/api/v3/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "ssh://git@github.example.com:2222/octocat/Hello-World.git", prefix: "/api/v3", want: "https://github.example.com/api/v3/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "https://example.com/github/octocat/Hello-World", prefix: "/github/api/v3", want: "https://example.com/github/api/v3/repos/octocat/Hello-World/pulls/1347"},
		// An API URL given wins, with or without /api/v3.
		{repoURL: "git@github.example.com:octocat/Hello-World.git", apiURL: "https://api.github.example.com", want: "https://api.github.example.com/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "https://github.example.com/octocat/Hello-World", apiURL: "https://ghe.example.com", prefix: "/api/v3", want: "https://ghe.example.com/api/v3/repos/octocat/Hello-World/pulls/1347"},
		{repoURL: "https://github.example.com/octocat/Hello-World", apiURL: "https://ghe.example.com/api/v3/", prefix: "/api/v3", want: "https://ghe.example.com/api/v3/repos/octocat/Hello-World/pulls/1347"},
	} {
		t.Run(tc.repoURL+" "+tc.apiURL, func(t *testing.T) {
			g := NewWithT(t)
			api := newGitHubAPI(t, tc.prefix)
			api.answer("GET /repos/octocat/Hello-World/pulls/1347", http.StatusOK, documented, nil, "")
			redirect := contracttest.NewRedirect(api.srv, "")
			f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.GitHub, RepoURL: tc.repoURL, APIURL: tc.apiURL, Token: gitHubToken, HTTPClient: redirect.Client()})
			g.Expect(err).NotTo(HaveOccurred())
			pr, err := f.Get(t.Context(), 1347)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pr.Number).To(BeEquivalentTo(1347))
			g.Expect(redirect.Targets()).To(Equal([]string{tc.want}))
		})
	}
}

func TestContractGitHubDoesNotFollowARedirectToAnotherHost(t *testing.T) {
	g := NewWithT(t)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect to another host was followed, with Authorization %q", r.Header.Get("Authorization"))
	}))
	t.Cleanup(elsewhere.Close)
	api := newGitHubAPI(t, "/api/v3")
	api.routes["GET /repos/octocat/Hello-World/pulls/1347"] = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/repos/octocat/Hello-World/pulls/1347", http.StatusFound)
	}
	_, err := api.forge(t).Get(t.Context(), 1347)
	g.Expect(err).To(MatchError(ContainSubstring("another address than its API's: not followed")))
}

func TestContractGitHubBoundsTheAnswers(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3")
	var pr map[string]any
	g.Expect(json.Unmarshal(contracttest.LoadFixture(t, "github/get-pull-request").Response, &pr)).To(Succeed())
	pr["body"] = strings.Repeat("x", 2<<20)
	huge, _ := json.Marshal(pr)
	api.answer("GET /repos/octocat/Hello-World/pulls/1347", http.StatusOK, huge, nil, "")
	_, err := api.forge(t).Get(t.Context(), 1347)
	g.Expect(errors.Is(err, pullrequest.ErrAnswerTooLarge)).To(BeTrue(), "%v", err)
}

// --- helpers shared with gitlab_contract_test.go and gitea_test.go ---

// withFields is a JSON object with some of its top-level fields set.
func withFields(t *testing.T, object json.RawMessage, fields map[string]any) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(object, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		m[k] = v
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkRequest checks a request's query (exactly want, when want is not nil) and its JSON body
// (equal to wantBody, when not empty).
func checkRequest(t *testing.T, r *http.Request, want neturl.Values, wantBody string) {
	t.Helper()
	if want != nil && r.URL.Query().Encode() != want.Encode() {
		t.Errorf("%s %s: the query is %q, want %q", r.Method, r.URL.Path, r.URL.Query().Encode(), want.Encode())
	}
	if wantBody == "" {
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type is %q, want application/json", r.Method, r.URL.Path, ct)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("%s %s: reading the body: %v", r.Method, r.URL.Path, err)
		return
	}
	var got, wanted any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Errorf("%s %s: the body is not JSON: %q", r.Method, r.URL.Path, body)
		return
	}
	if err := json.Unmarshal([]byte(wantBody), &wanted); err != nil {
		t.Fatalf("the wanted body is not JSON: %v", err)
	}
	if g, w := mustJSON(got), mustJSON(wanted); g != w {
		t.Errorf("%s %s: the body is %s, want %s", r.Method, r.URL.Path, g, w)
	}
}

// mustJSON is v in JSON, with the keys of its objects sorted.
func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
