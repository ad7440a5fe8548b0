// Contract tests of the GitLab client against recorded responses from GitLab's REST API
// documentation (testdata/contract/gitlab, each file naming the page it comes from). GitLab
// cannot be reached from the machines that run these tests, so this is the one place in the
// package where a recorded exchange stands in for a server: the test server checks each request
// the official client (gitlab.com/gitlab-org/api/client-go) sends (method, path, query, token and
// JSON body), serves the documented bodies, and the tests assert the merge requests and errors
// the Forge makes of them. The fixture helpers are in github_contract_test.go.
package pullrequest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/contracttest"

	"github.com/sluice-gitops/sluice/shared/pullrequest"
)

const gitLabToken = "glpat-contract-test-token-0123"

// gitLabAPI is a test server answering as GitLab's REST API (/api/v4, under prefix) for one
// project, with the recorded responses.
type gitLabAPI struct {
	t      *testing.T
	srv    *httptest.Server
	prefix string
	log    contracttest.RequestLog
	// project is the URL-encoded project path the requests must name.
	project string
	// routes maps "METHOD escaped path" (after <prefix>/api/v4/projects/<project>) to its handler.
	routes map[string]http.HandlerFunc
}

func newGitLabAPI(t *testing.T, prefix, project string) *gitLabAPI {
	api := &gitLabAPI{t: t, prefix: prefix, project: neturl.PathEscape(project), routes: map[string]http.HandlerFunc{}}
	api.srv = httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(api.srv.Close)
	return api
}

func (api *gitLabAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.log.Add(r)
	// The client names the project by its URL-encoded full path, as GitLab documents.
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), api.prefix+"/api/v4/projects/"+api.project)
	h := api.routes[r.Method+" "+path]
	if !ok || h == nil {
		api.t.Errorf("unexpected request %s %s", r.Method, r.URL.EscapedPath())
		contracttest.WriteJSON(w, http.StatusNotFound, []byte(`{"message":"404 Project Not Found"}`))
		return
	}
	if got := r.Header.Get("PRIVATE-TOKEN"); got != gitLabToken {
		api.t.Errorf("%s %s: PRIVATE-TOKEN is %q, want the token", r.Method, path, got)
	}
	if got := r.Header.Get("Authorization"); got != "" {
		api.t.Errorf("%s %s: an Authorization header %q beside PRIVATE-TOKEN", r.Method, path, got)
	}
	h(w, r)
}

// answer serves a response with status, after checking the query (want) and, for a request with
// a body, its JSON (wantBody).
func (api *gitLabAPI) answer(route string, status int, response json.RawMessage, want neturl.Values, wantBody string) {
	api.routes[route] = func(w http.ResponseWriter, r *http.Request) {
		checkRequest(api.t, r, want, wantBody)
		contracttest.WriteJSON(w, status, response)
	}
}

func (api *gitLabAPI) forge(t *testing.T) pullrequest.Forge {
	t.Helper()
	f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.GitLab, RepoURL: api.srv.URL + "/my-group/my-project.git", Token: gitLabToken, HTTPClient: api.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// mrQuery is the query of the search for the opened merge request from branch into master.
func mrQuery(branch string) neturl.Values {
	return neturl.Values{"state": {"opened"}, "source_branch": {branch}, "target_branch": {"master"}, "per_page": {"100"}}
}

func TestContractGitLabEnsureOpensAMergeRequest(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "", "my-group/my-project")
	api.answer("GET /merge_requests", http.StatusOK, []byte("[]"), mrQuery("manual-job-rules"), "")
	api.answer("POST /merge_requests", http.StatusCreated, contracttest.LoadFixture(t, "gitlab/create-merge-request").Response, nil,
		`{"title":"Update the images","description":"Automated image update.","source_branch":"manual-job-rules","target_branch":"master","labels":"automated,images"}`)

	pr, created, err := api.forge(t).Ensure(t.Context(), pullrequest.Request{
		Head: "manual-job-rules", Base: "master", Title: "Update the images", Body: "Automated image update.",
		Labels: []string{"automated", "images"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(pr).To(Equal(pullrequest.PullRequest{
		Number: 133, URL: "https://gitlab.com/marcel.amirault/test-project/-/merge_requests/133", State: pullrequest.Open,
		Head: "manual-job-rules", Base: "master", HeadSHA: "e82eb4a098e32c796079ca3915e07487fc4db24c",
	}))
	// The labels go with the merge request: one request.
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v4/projects/my-group%2Fmy-project/merge_requests?per_page=100&source_branch=manual-job-rules&state=opened&target_branch=master",
		"POST /api/v4/projects/my-group%2Fmy-project/merge_requests",
	}))
}

func TestContractGitLabEnsureUpdatesTheOpenMergeRequest(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "", "my-group/my-project")
	api.answer("GET /merge_requests", http.StatusOK, contracttest.LoadFixture(t, "gitlab/list-project-merge-requests").Response, mrQuery("test1"), "")
	api.answer("PUT /merge_requests/12", http.StatusOK, contracttest.LoadFixture(t, "gitlab/update-merge-request").Response, nil,
		`{"title":"Update the images, again","description":"Automated image update, second push."}`)
	f := api.forge(t)

	// The listing holds a fork's merge request from a branch of the same name (!1), which is not
	// the project's: the project's own (!12) is updated, and no other is opened.
	pr, created, err := f.Ensure(t.Context(), pullrequest.Request{
		Head: "test1", Base: "master", Title: "Update the images, again", Body: "Automated image update, second push.",
		Labels: []string{"not-added-to-an-open-one"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(pr).To(Equal(pullrequest.PullRequest{
		Number: 12, URL: "http://gitlab.example.com/my-group/my-project/merge_requests/12", State: pullrequest.Open,
		Head: "test1", Base: "master", HeadSHA: "9999999999999999999999999999999999999999",
	}))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v4/projects/my-group%2Fmy-project/merge_requests?per_page=100&source_branch=test1&state=opened&target_branch=master",
		"PUT /api/v4/projects/my-group%2Fmy-project/merge_requests/12",
	}))

	// Already as asked: nothing is written.
	pr, created, err = f.Ensure(t.Context(), pullrequest.Request{Head: "test1", Base: "master", Title: "Update the images", Body: "Automated image update."})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(pr.Number).To(BeEquivalentTo(12))
	g.Expect(api.log.All()).To(HaveLen(3))
}

func TestContractGitLabGetStates(t *testing.T) {
	documented := contracttest.LoadFixture(t, "gitlab/get-merge-request").Response
	for state, want := range map[string]pullrequest.State{
		"opened": pullrequest.Open,
		"locked": pullrequest.Open, // while GitLab merges it
		"closed": pullrequest.Closed,
		"merged": pullrequest.Merged,
	} {
		t.Run(state, func(t *testing.T) {
			g := NewWithT(t)
			api := newGitLabAPI(t, "", "my-group/my-project")
			api.answer("GET /merge_requests/133", http.StatusOK, withFields(t, documented, map[string]any{"state": state}), neturl.Values{}, "")
			pr, err := api.forge(t).Get(t.Context(), 133)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pr).To(Equal(pullrequest.PullRequest{
				Number: 133, URL: "https://gitlab.com/marcel.amirault/test-project/-/merge_requests/133", State: want,
				Head: "manual-job-rules", Base: "master", HeadSHA: "e82eb4a098e32c796079ca3915e07487fc4db24c",
			}))
			g.Expect(api.log.All()).To(Equal([]string{"GET /api/v4/projects/my-group%2Fmy-project/merge_requests/133"}))
		})
	}
}

func TestContractGitLabErrors(t *testing.T) {
	request := pullrequest.Request{Head: "manual-job-rules", Base: "master", Title: "Update the images"}

	t.Run("a refused token", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitLabAPI(t, "", "my-group/my-project")
		api.answer("GET /merge_requests", http.StatusUnauthorized, contracttest.LoadFixture(t, "gitlab/unauthorized").Response, nil, "")
		_, _, err := api.forge(t).Ensure(t.Context(), request)
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`looking for an open merge request from "manual-job-rules" into "master" of `+api.srv.URL+"/my-group/my-project"),
			ContainSubstring(`GitLab answered HTTP 401 Unauthorized ("401 Unauthorized"): the token is wrong, expired or revoked: replace it`))))
		g.Expect(err.Error()).NotTo(ContainSubstring(gitLabToken))
		// One request: GitLab's client does not retry, the controller does, with its backoff.
		g.Expect(api.log.All()).To(HaveLen(1))
	})

	t.Run("a request not allowed", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitLabAPI(t, "", "my-group/my-project")
		api.answer("GET /merge_requests", http.StatusOK, []byte("[]"), nil, "")
		api.answer("POST /merge_requests", http.StatusForbidden, contracttest.LoadFixture(t, "gitlab/forbidden").Response, nil, "")
		_, _, err := api.forge(t).Ensure(t.Context(), request)
		g.Expect(err).To(MatchError(And(
			ContainSubstring(`opening a merge request from "manual-job-rules" into "master"`),
			ContainSubstring(`HTTP 403 Forbidden ("403 Forbidden"): the token cannot open or update merge requests of the project: it needs the api scope and at least the Developer role`))))
		var apiErr *pullrequest.APIError
		g.Expect(errors.As(err, &apiErr)).To(BeTrue())
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusForbidden))
	})

	t.Run("no such merge request", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitLabAPI(t, "", "my-group/my-project")
		api.answer("GET /merge_requests/7", http.StatusNotFound, contracttest.LoadFixture(t, "gitlab/not-found").Response, nil, "")
		_, err := api.forge(t).Get(t.Context(), 7)
		g.Expect(err).To(MatchError(And(ContainSubstring("reading merge request !7 of "),
			ContainSubstring("HTTP 404 Not Found: check the repository URL"))))
	})
}

func TestContractGitLabAPIAddresses(t *testing.T) {
	documented := contracttest.LoadFixture(t, "gitlab/get-merge-request").Response
	for _, tc := range []struct {
		repoURL, apiURL string
		project, prefix string // what the test server answers
		want            string // the API address the client asks
	}{
		// gitlab.com, in every form of its URLs; nested groups make one URL-encoded path.
		{repoURL: "https://gitlab.com/group/app", project: "group/app", want: "https://gitlab.com/api/v4/projects/group%2Fapp/merge_requests/133"},
		{repoURL: "ssh://git@gitlab.com/group/sub/app.git", project: "group/sub/app", want: "https://gitlab.com/api/v4/projects/group%2Fsub%2Fapp/merge_requests/133"},
		{repoURL: "git@gitlab.com:group/sub/app.git", project: "group/sub/app", want: "https://gitlab.com/api/v4/projects/group%2Fsub%2Fapp/merge_requests/133"},
		// A self-managed GitLab: its API is at /api/v4 of its host.
		{repoURL: "https://gitlab.example.com/platform/team/deep/app", project: "platform/team/deep/app", want: "https://gitlab.example.com/api/v4/projects/platform%2Fteam%2Fdeep%2Fapp/merge_requests/133"},
		{repoURL: "ssh://git@gitlab.example.com:2222/platform/app.git", project: "platform/app", want: "https://gitlab.example.com/api/v4/projects/platform%2Fapp/merge_requests/133"},
		// Under a sub-path, the API URL tells the prefix, which is not part of the project's path.
		{repoURL: "https://example.com/gitlab/platform/app.git", apiURL: "https://example.com/gitlab", project: "platform/app", prefix: "/gitlab", want: "https://example.com/gitlab/api/v4/projects/platform%2Fapp/merge_requests/133"},
		{repoURL: "https://example.com/gitlab/platform/app.git", apiURL: "https://example.com/gitlab/api/v4/", project: "platform/app", prefix: "/gitlab", want: "https://example.com/gitlab/api/v4/projects/platform%2Fapp/merge_requests/133"},
		{repoURL: "git@ssh.example.com:platform/app.git", apiURL: "https://gitlab-api.example.com", project: "platform/app", want: "https://gitlab-api.example.com/api/v4/projects/platform%2Fapp/merge_requests/133"},
	} {
		t.Run(tc.repoURL+" "+tc.apiURL, func(t *testing.T) {
			g := NewWithT(t)
			api := newGitLabAPI(t, tc.prefix, tc.project)
			api.answer("GET /merge_requests/133", http.StatusOK, documented, nil, "")
			redirect := contracttest.NewRedirect(api.srv, "")
			f, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.GitLab, RepoURL: tc.repoURL, APIURL: tc.apiURL, Token: gitLabToken, HTTPClient: redirect.Client()})
			g.Expect(err).NotTo(HaveOccurred())
			pr, err := f.Get(t.Context(), 133)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pr.Number).To(BeEquivalentTo(133))
			g.Expect(redirect.Targets()).To(Equal([]string{tc.want}))
		})
	}
}
