// Contract tests of the GitLab lister against recorded responses from GitLab's REST API
// documentation (testdata/contract/gitlab, each file naming the page it comes from). GitLab
// cannot be reached from the machines that run these tests, so this is the one place in Sluice
// where a recorded exchange stands in for a server: the test server checks each request the
// official client (gitlab.com/gitlab-org/api/client-go) sends (method, path, query, token),
// serves the documented bodies page by page with the documented pagination headers (X-Page,
// X-Next-Page, X-Per-Page, X-Total, X-Total-Pages and Link), and the tests assert the items the
// lister makes of them. The fixture helpers are in github_contract_test.go.
package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/contracttest"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/forge"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

const gitLabToken = "glpat-contract-test-token-0123"

// gitLabAPI is a test server answering as GitLab's REST API (/api/v4) for the project
// my-group/sub/my-project, with the recorded responses.
type gitLabAPI struct {
	t     *testing.T
	srv   *httptest.Server
	token string
	log   contracttest.RequestLog
	// routes maps "METHOD escaped path" (after /api/v4/projects/<id>) to its handler.
	routes map[string]http.HandlerFunc
	// project is the URL-encoded project path the requests must name.
	project string
}

func newGitLabAPI(t *testing.T, project, token string) *gitLabAPI {
	api := &gitLabAPI{t: t, token: token, routes: map[string]http.HandlerFunc{}, project: neturl.PathEscape(project)}
	api.srv = httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(api.srv.Close)
	return api
}

func (api *gitLabAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.log.Add(r)
	// The client names the project by its URL-encoded full path, as GitLab documents.
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4/projects/"+api.project)
	h := api.routes[r.Method+" "+path]
	if !ok || h == nil {
		api.t.Errorf("unexpected request %s %s", r.Method, r.URL.EscapedPath())
		contracttest.WriteJSON(w, http.StatusNotFound, []byte(`{"message":"404 Project Not Found"}`))
		return
	}
	if got := r.Header.Get("PRIVATE-TOKEN"); got != api.token {
		api.t.Errorf("%s %s: PRIVATE-TOKEN is %q, want %q", r.Method, path, got, api.token)
	}
	h(w, r)
}

// pages serves the fixture's pages at path, checking the query (per_page, page and want), with
// GitLab's offset pagination headers.
func (api *gitLabAPI) pages(path string, fx contracttest.Fixture, want neturl.Values) {
	api.routes["GET "+path] = func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		checkQuery(api.t, r, q, want)
		n, err := strconv.Atoi(q.Get("page"))
		if err != nil || n < 1 || n > len(fx.Pages) {
			api.t.Errorf("%s: page %q out of the %d recorded", r.URL.Path, q.Get("page"), len(fx.Pages))
			contracttest.WriteJSON(w, http.StatusBadRequest, []byte(`{"error":"page is invalid"}`))
			return
		}
		total := 0
		for _, p := range fx.Pages {
			var items []json.RawMessage
			_ = json.Unmarshal(p, &items)
			total += len(items)
		}
		gitLabPageHeaders(w, r, n, len(fx.Pages), total)
		contracttest.WriteJSON(w, http.StatusOK, fx.Pages[n-1])
	}
}

// gitLabPageHeaders writes the headers GitLab documents for offset pagination; last is 0 when
// the number of pages is not told (as GitLab does past 10,000 items).
func gitLabPageHeaders(w http.ResponseWriter, r *http.Request, n, last, total int) {
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(n))
	h.Set("X-Per-Page", r.URL.Query().Get("per_page"))
	h.Set("X-Prev-Page", "")
	if n > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(n-1))
	}
	links := []string{fmt.Sprintf(`<%s>; rel="first"`, pageURL(r, 1))}
	if last == 0 || n < last {
		h.Set("X-Next-Page", strconv.Itoa(n+1))
		links = append(links, fmt.Sprintf(`<%s>; rel="next"`, pageURL(r, n+1)))
	} else {
		h.Set("X-Next-Page", "")
	}
	if last > 0 {
		h.Set("X-Total", strconv.Itoa(total))
		h.Set("X-Total-Pages", strconv.Itoa(last))
		links = append(links, fmt.Sprintf(`<%s>; rel="last"`, pageURL(r, last)))
	}
	h.Set("Link", strings.Join(links, ", "))
}

func (api *gitLabAPI) projectURL() string { return api.srv.URL + "/my-group/sub/my-project" }

func (api *gitLabAPI) lister(t *testing.T) forge.Lister {
	t.Helper()
	lister, err := forge.NewGitLab(forge.Options{URL: api.projectURL(), Token: api.token, HTTPClient: api.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return lister
}

func TestContractGitLabBranches(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	api.pages("/repository/branches", contracttest.LoadFixture(t, "gitlab/list-repository-branches"), nil)

	items, err := api.lister(t).List(t.Context(), forge.Branches)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]forge.Item{
		{ID: inputs.ID("master"), SHA: "7b5c3cc8be40ee161ae89a06bba6229da1032a0c", Branch: "master",
			Extra: map[string]any{"slug": "master"}},
		{ID: inputs.ID("Feature/Login_Page"), SHA: "4ad91d3c1144c406e50c7b33bae684bd6837faf8", Branch: "Feature/Login_Page",
			Extra: map[string]any{"slug": "feature-login-page"}},
	}))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/repository/branches?page=1&per_page=100",
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/repository/branches?page=2&per_page=100",
	}))
}

func TestContractGitLabTags(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	api.pages("/repository/tags", contracttest.LoadFixture(t, "gitlab/list-repository-tags"), nil)

	items, err := api.lister(t).List(t.Context(), forge.Tags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]forge.Item{
		{ID: inputs.ID("v1.0.0"), SHA: "2695effb5807a22ff3d138d593fd856244e155e7", Tag: "v1.0.0",
			Extra: map[string]any{"slug": "v1-0-0"}},
		{ID: inputs.ID("v1.1.0"), SHA: "60a8ff033665e1207714d6670fcd7b65304ec02f", Tag: "v1.1.0",
			Extra: map[string]any{"slug": "v1-1-0"}},
	}))
	g.Expect(api.log.All()).To(HaveLen(2))
}

func TestContractGitLabMergeRequests(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	api.pages("/merge_requests", contracttest.LoadFixture(t, "gitlab/list-project-merge-requests"), neturl.Values{"state": {"opened"}})

	items, err := api.lister(t).List(t.Context(), forge.Requests)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]forge.Item{
		{ID: "1", SHA: "8888888888888888888888888888888888888888", Branch: "test1", Title: "test1", Author: "admin",
			Labels: []string{"Community contribution", "Manage"}, Extra: map[string]any{"slug": "test1"}},
		{ID: "12", SHA: "9999999999999999999999999999999999999999", Branch: "Review/Login_Page",
			Title: "Review/Login page: new layout", Author: "axel.block", Extra: map[string]any{"slug": "review-login-page"}},
	}))
	// flux-operator's keys for a GitLabMergeRequest provider, slug included.
	g.Expect(items[0].Input()).To(Equal(map[string]any{
		"id": "1", "sha": "8888888888888888888888888888888888888888", "branch": "test1", "slug": "test1",
		"title": "test1", "author": "admin", "labels": []any{"Community contribution", "Manage"},
	}))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/merge_requests?page=1&per_page=100&state=opened",
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/merge_requests?page=2&per_page=100&state=opened",
	}))
}

func TestContractGitLabEnvironments(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	api.pages("/environments", contracttest.LoadFixture(t, "gitlab/list-environments"), nil)
	var deployments []struct {
		Environment struct {
			Name string `json:"name"`
		} `json:"environment"`
	}
	recorded := contracttest.LoadFixture(t, "gitlab/list-project-deployments").Response
	var raw []json.RawMessage
	g.Expect(json.Unmarshal(recorded, &raw)).To(Succeed())
	g.Expect(json.Unmarshal(recorded, &deployments)).To(Succeed())
	api.routes["GET /deployments"] = func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		checkQuery(t, r, q, neturl.Values{"order_by": {"created_at"}, "sort": {"desc"}, "page": {"1"}})
		var of []json.RawMessage
		for i, d := range deployments {
			if d.Environment.Name == q.Get("environment") {
				of = append(of, raw[i])
			}
		}
		body, _ := json.Marshal(of)
		gitLabPageHeaders(w, r, 1, 1, len(of))
		contracttest.WriteJSON(w, http.StatusOK, body)
	}

	items, err := api.lister(t).List(t.Context(), forge.Environments)
	g.Expect(err).NotTo(HaveOccurred())
	// review/fix-foo is available: its newest successful deployment, past a failed one.
	// review/restarted is stopped but being deployed again: its running deployment.
	// review/closed is stopped and not being deployed: left out.
	g.Expect(items).To(Equal([]forge.Item{
		{ID: "1", SHA: "99d03678b90d914dbb1b109132516d71a4a03ea8", Branch: "fix-foo", Title: "review/fix-foo", Author: "root",
			Extra: map[string]any{forge.EnvironmentKey: "review/fix-foo", "slug": "review-fix-foo-dfjre3"}},
		{ID: "2", SHA: "416d8ea11849050d3d1f5104cf8cf51053e790ab", Branch: "restarted", Title: "review/restarted", Author: "axel.block",
			Extra: map[string]any{forge.EnvironmentKey: "review/restarted", "slug": "review-restarted-k3x9q1"}},
	}))
	// flux-operator's keys for a GitLabEnvironment provider: the environment's name is its title.
	g.Expect(items[0].Input()).To(Equal(map[string]any{
		"id": "1", "sha": "99d03678b90d914dbb1b109132516d71a4a03ea8", "branch": "fix-foo",
		"title": "review/fix-foo", "author": "root", "slug": "review-fix-foo-dfjre3",
	}))
	// Select filters environments by that name.
	kept, err := forge.Select(forge.Environments, items, forge.Filter{IncludeEnvironment: "^review/fix-"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept).To(HaveLen(1))
	g.Expect(kept[0].ID).To(Equal("1"))

	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/environments?page=1&per_page=100",
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/environments?page=2&per_page=100",
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/deployments?environment=review%2Ffix-foo&order_by=created_at&page=1&per_page=100&sort=desc",
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/deployments?environment=review%2Frestarted&order_by=created_at&page=1&per_page=100&sort=desc",
		"GET /api/v4/projects/my-group%2Fsub%2Fmy-project/deployments?environment=review%2Fclosed&order_by=created_at&page=1&per_page=100&sort=desc",
	}))
}

func TestContractGitLabDotComAPIAddress(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "group/app", gitLabToken)
	api.pages("/repository/branches", contracttest.LoadFixture(t, "gitlab/list-repository-branches"), nil)
	redirect := contracttest.NewRedirect(api.srv, "")

	for _, url := range []string{"https://gitlab.com/group/app", "https://gitlab.com/group/app.git", "https://GitLab.com/group/app/"} {
		lister, err := forge.NewGitLab(forge.Options{URL: url, Token: gitLabToken, HTTPClient: redirect.Client()})
		g.Expect(err).NotTo(HaveOccurred())
		items, err := lister.List(t.Context(), forge.Branches)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(items).To(HaveLen(2))
	}
	g.Expect(redirect.Targets()).To(HaveEach("https://gitlab.com/api/v4/projects/group%2Fapp/repository/branches"))
}

func TestContractGitLabSelfManagedAPIAddress(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "platform/team/deep/app", "")
	api.pages("/repository/tags", contracttest.LoadFixture(t, "gitlab/list-repository-tags"), nil)
	redirect := contracttest.NewRedirect(api.srv, "")

	// Any other host is a self-managed GitLab with the API at /api/v4; nested groups make one
	// URL-encoded project path. Without a token the requests carry an empty PRIVATE-TOKEN, which
	// GitLab ignores.
	lister, err := forge.NewGitLab(forge.Options{URL: "https://gitlab.example.com/platform/team/deep/app", HTTPClient: redirect.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = lister.List(t.Context(), forge.Tags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(redirect.Targets()).To(HaveEach("https://gitlab.example.com/api/v4/projects/platform%2Fteam%2Fdeep%2Fapp/repository/tags"))
	g.Expect(redirect.Targets()).To(HaveLen(2))
}

func TestContractGitLabTooManyItems(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	item := firstItem(t, contracttest.LoadFixture(t, "gitlab/list-repository-branches"))
	// A project with more branches than Sluice lists: every page is full and has a next one,
	// and GitLab tells no total past 10,000 items.
	api.routes["GET /repository/branches"] = func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		gitLabPageHeaders(w, r, n, 0, 0)
		contracttest.WriteJSON(w, http.StatusOK, fullPage(t, item, "name", n))
	}

	_, err := api.lister(t).List(t.Context(), forge.Branches)
	var tooMany *forge.TooManyError
	g.Expect(errors.As(err, &tooMany)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("branches of " + api.projectURL()))
	g.Expect(api.log.All()).To(HaveLen(forge.MaxItems/forge.PageSize + 1))
}

func TestContractGitLabAuthenticationFailure(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	refused := contracttest.LoadFixture(t, "gitlab/unauthorized")
	for _, path := range []string{"/repository/tags", "/environments"} {
		api.routes["GET "+path] = func(w http.ResponseWriter, _ *http.Request) {
			contracttest.WriteJSON(w, http.StatusUnauthorized, refused.Response)
		}
	}

	for _, kind := range []forge.Kind{forge.Tags, forge.Environments} {
		_, err := api.lister(t).List(t.Context(), kind)
		g.Expect(err).To(MatchError(ContainSubstring("authentication failed (HTTP 401)")))
		g.Expect(err.Error()).NotTo(ContainSubstring(gitLabToken))
		g.Expect(inputs.IsTerminal(err)).To(BeFalse(), "a Secret can be fixed: the controller retries")
	}
	// One request each: GitLab's client does not retry, the controller does, with its backoff.
	g.Expect(api.log.All()).To(HaveLen(2))
}

func TestContractGitLabStopsWithItsContext(t *testing.T) {
	g := NewWithT(t)
	api := newGitLabAPI(t, "my-group/sub/my-project", gitLabToken)
	api.pages("/repository/branches", contracttest.LoadFixture(t, "gitlab/list-repository-branches"), nil)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := api.lister(t).List(ctx, forge.Branches)
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "%v", err)
	g.Expect(api.log.All()).To(BeEmpty())
}

func TestContractGitLabInvalidURLs(t *testing.T) {
	for _, url := range []string{
		"gitlab.com/group/app",
		"git@gitlab.com:group/app.git",
		"https://gitlab.com/app",
		"https://gitlab.com/",
		"https://gitlab.com/group/app/-/merge_requests",
		"https://gitlab.com/group//app",
		"https://gitlab.com/group/app#readme",
		"https://oauth2:p4ssw0rd@gitlab.com/group/app",
	} {
		t.Run(url, func(t *testing.T) {
			g := NewWithT(t)
			_, err := forge.NewGitLab(forge.Options{URL: url})
			var invalid *inputs.InvalidURLError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "%v", err)
			g.Expect(inputs.IsTerminal(err)).To(BeTrue())
			g.Expect(err.Error()).NotTo(ContainSubstring("p4ssw0rd"))
		})
	}
}
