// Contract tests of the GitHub lister and of GitHub App authentication against recorded
// responses from GitHub's REST API documentation (testdata/contract/github, each file naming the
// page it comes from). GitHub cannot be reached from the machines that run these tests, so this
// is the one place in Sluice where a recorded exchange stands in for a server: the test server
// checks each request the official client (go-github) sends (method, path, query, credentials),
// serves the documented bodies page by page with the documented Link header, and the tests
// assert the items the lister makes of them.
//
// The fixtures, the request log and the redirecting transport are shared/contracttest's; the
// helpers shared with gitlab_contract_test.go are at the end of this file.
package forge_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/contracttest"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/forge"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

const gitHubToken = "ghp_contract-test-token-0123456789"

// gitHubAPI is a test server answering as GitHub's REST API under prefix ("/api/v3" for a
// GitHub Enterprise Server, "" for api.github.com) with the recorded responses.
type gitHubAPI struct {
	t      *testing.T
	srv    *httptest.Server
	prefix string
	token  string
	// app is set when the requests authenticate as a GitHub App: the routes check the JWT.
	app bool
	log contracttest.RequestLog
	// routes maps "METHOD path" (path after the prefix) to its handler.
	routes map[string]http.HandlerFunc
}

func newGitHubAPI(t *testing.T, prefix, token string) *gitHubAPI {
	api := &gitHubAPI{t: t, prefix: prefix, token: token, routes: map[string]http.HandlerFunc{}}
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
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.github") {
		api.t.Errorf("%s %s: Accept is %q, GitHub documents application/vnd.github+json", r.Method, path, r.Header.Get("Accept"))
	}
	want := ""
	if api.token != "" {
		want = "Bearer " + api.token
	}
	if got := r.Header.Get("Authorization"); !api.app && got != want {
		api.t.Errorf("%s %s: Authorization is %q, want %q", r.Method, path, got, want)
	}
	h(w, r)
}

// pages serves the fixture's pages at path, checking the query (per_page, page and want), and
// links each page but the last to the next one as GitHub does.
func (api *gitHubAPI) pages(path string, fx contracttest.Fixture, want neturl.Values) {
	api.routes["GET "+path] = func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		checkQuery(api.t, r, q, want)
		n, err := strconv.Atoi(q.Get("page"))
		if err != nil || n < 1 || n > len(fx.Pages) {
			api.t.Errorf("%s: page %q out of the %d recorded", r.URL.Path, q.Get("page"), len(fx.Pages))
			http.Error(w, "{}", http.StatusUnprocessableEntity)
			return
		}
		if n < len(fx.Pages) {
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`,
				pageURL(r, n+1), pageURL(r, len(fx.Pages))))
		}
		contracttest.WriteJSON(w, http.StatusOK, fx.Pages[n-1])
	}
}

func (api *gitHubAPI) repoURL() string { return api.srv.URL + "/octocat/Hello-World" }

func TestContractGitHubBranches(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", gitHubToken)
	api.pages("/repos/octocat/Hello-World/branches", contracttest.LoadFixture(t, "github/list-branches"), nil)

	lister, err := forge.NewGitHub(forge.Options{URL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	items, err := lister.List(t.Context(), forge.Branches)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]forge.Item{
		{ID: inputs.ID("master"), SHA: "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc", Branch: "master"},
		{ID: inputs.ID("feature/login"), SHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", Branch: "feature/login"},
	}))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v3/repos/octocat/Hello-World/branches?page=1&per_page=100",
		"GET /api/v3/repos/octocat/Hello-World/branches?page=2&per_page=100",
	}))
}

func TestContractGitHubTags(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", gitHubToken)
	api.pages("/repos/octocat/Hello-World/tags", contracttest.LoadFixture(t, "github/list-repository-tags"), nil)

	lister, err := forge.NewGitHub(forge.Options{URL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	items, err := lister.List(t.Context(), forge.Tags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]forge.Item{
		{ID: inputs.ID("v0.1"), SHA: "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc", Tag: "v0.1"},
		{ID: inputs.ID("v0.2.0"), SHA: "e5bd3914e2e596debea16f433f57875b5b90bcd6", Tag: "v0.2.0"},
	}))
	g.Expect(api.log.All()).To(HaveLen(2))
}

func TestContractGitHubPullRequests(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", gitHubToken)
	api.pages("/repos/octocat/Hello-World/pulls", contracttest.LoadFixture(t, "github/list-pull-requests"), neturl.Values{"state": {"open"}})

	lister, err := forge.NewGitHub(forge.Options{URL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	items, err := lister.List(t.Context(), forge.Requests)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]forge.Item{
		{ID: "1347", SHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", Branch: "new-topic",
			Title: "Amazing new feature", Author: "octocat", Labels: []string{"bug"}},
		{ID: "1348", SHA: "e5bd3914e2e596debea16f433f57875b5b90bcd6", Branch: "feature/login",
			Title: "Preview the new login page", Author: "hubot", Labels: []string{"deploy/preview", "enhancement"}},
	}))
	// The inputs carry flux-operator's keys for a GitHubPullRequest provider, and no others.
	g.Expect(items[0].Input()).To(Equal(map[string]any{
		"id": "1347", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "branch": "new-topic",
		"title": "Amazing new feature", "author": "octocat", "labels": []any{"bug"},
	}))
	g.Expect(api.log.All()).To(Equal([]string{
		"GET /api/v3/repos/octocat/Hello-World/pulls?page=1&per_page=100&state=open",
		"GET /api/v3/repos/octocat/Hello-World/pulls?page=2&per_page=100&state=open",
	}))
}

func TestContractGitHubDotComAPIAddress(t *testing.T) {
	g := NewWithT(t)
	// github.com's API is api.github.com, without /api/v3: the requests are redirected to the
	// test server, which serves them at the root.
	api := newGitHubAPI(t, "", gitHubToken)
	api.pages("/repos/octocat/Hello-World/branches", contracttest.LoadFixture(t, "github/list-branches"), nil)
	redirect := contracttest.NewRedirect(api.srv, "")

	for _, url := range []string{"https://github.com/octocat/Hello-World", "https://github.com/octocat/Hello-World.git", "https://www.github.com/octocat/Hello-World/"} {
		lister, err := forge.NewGitHub(forge.Options{URL: url, Token: gitHubToken, HTTPClient: redirect.Client()})
		g.Expect(err).NotTo(HaveOccurred())
		items, err := lister.List(t.Context(), forge.Branches)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(items).To(HaveLen(2))
	}
	g.Expect(redirect.Targets()).To(HaveEach("https://api.github.com/repos/octocat/Hello-World/branches"))
}

func TestContractGitHubEnterpriseAPIAddress(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", "")
	api.pages("/repos/octocat/Hello-World/tags", contracttest.LoadFixture(t, "github/list-repository-tags"), nil)
	redirect := contracttest.NewRedirect(api.srv, "")

	// Any other host is a GitHub Enterprise Server, whose API is under /api/v3; without a token
	// the requests carry no Authorization.
	lister, err := forge.NewGitHub(forge.Options{URL: "https://github.example.com/octocat/Hello-World", HTTPClient: redirect.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = lister.List(t.Context(), forge.Tags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(redirect.Targets()).To(Equal([]string{
		"https://github.example.com/api/v3/repos/octocat/Hello-World/tags",
		"https://github.example.com/api/v3/repos/octocat/Hello-World/tags",
	}))
}

func TestContractGitHubTooManyItems(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", gitHubToken)
	item := firstItem(t, contracttest.LoadFixture(t, "github/list-branches"))
	// A repository with more branches than Sluice lists: every page is full and links a next one.
	api.routes["GET /repos/octocat/Hello-World/branches"] = func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, pageURL(r, n+1)))
		contracttest.WriteJSON(w, http.StatusOK, fullPage(t, item, "name", n))
	}

	lister, err := forge.NewGitHub(forge.Options{URL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = lister.List(t.Context(), forge.Branches)
	var tooMany *forge.TooManyError
	g.Expect(errors.As(err, &tooMany)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("branches of " + api.repoURL()))
	g.Expect(api.log.All()).To(HaveLen(forge.MaxItems/forge.PageSize + 1))
}

func TestContractGitHubAuthenticationFailure(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", gitHubToken)
	refused := contracttest.LoadFixture(t, "github/unauthorized")
	for _, path := range []string{"/repos/octocat/Hello-World/branches", "/repos/octocat/Hello-World/pulls"} {
		api.routes["GET "+path] = func(w http.ResponseWriter, _ *http.Request) {
			contracttest.WriteJSON(w, http.StatusUnauthorized, refused.Response)
		}
	}

	lister, err := forge.NewGitHub(forge.Options{URL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	g.Expect(err).NotTo(HaveOccurred())
	for _, kind := range []forge.Kind{forge.Branches, forge.Requests} {
		_, err = lister.List(t.Context(), kind)
		g.Expect(err).To(MatchError(ContainSubstring("authentication failed (HTTP 401)")))
		g.Expect(err.Error()).NotTo(ContainSubstring(gitHubToken))
		g.Expect(inputs.IsTerminal(err)).To(BeFalse(), "a Secret can be fixed: the controller retries")
	}
}

func TestContractGitHubStopsWithItsContext(t *testing.T) {
	g := NewWithT(t)
	api := newGitHubAPI(t, "/api/v3", gitHubToken)
	api.pages("/repos/octocat/Hello-World/branches", contracttest.LoadFixture(t, "github/list-branches"), nil)
	lister, err := forge.NewGitHub(forge.Options{URL: api.repoURL(), Token: gitHubToken, HTTPClient: api.srv.Client()})
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = lister.List(ctx, forge.Branches)
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "%v", err)
	g.Expect(api.log.All()).To(BeEmpty())
}

func TestContractGitHubInvalidURLs(t *testing.T) {
	for _, url := range []string{
		"github.com/octocat/Hello-World",
		"ssh://git@github.com/octocat/Hello-World",
		"https://github.com/octocat",
		"https://github.com/octocat/Hello-World/tree/main",
		"https://github.com//Hello-World",
		"https://github.com/octocat/Hello-World?tab=readme",
		"https://user:p4ssw0rd@github.com/octocat/Hello-World",
		"https://",
		"%zz",
	} {
		t.Run(url, func(t *testing.T) {
			g := NewWithT(t)
			_, err := forge.NewGitHub(forge.Options{URL: url})
			var invalid *inputs.InvalidURLError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "%v", err)
			g.Expect(inputs.IsTerminal(err)).To(BeTrue())
			g.Expect(err.Error()).NotTo(ContainSubstring("p4ssw0rd"))
		})
	}
}

// appKey is a GitHub App's key pair, made for the test.
func appKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// appRoutes serves the App endpoints: the organization installation of octocat and the
// creation of tokens for installation 1, which check the JWT the client signed.
func (api *gitHubAPI) appRoutes(appID string, key *rsa.PublicKey, tokenResponse json.RawMessage) {
	api.app = true
	checkJWT := func(r *http.Request) bool {
		signed, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(signed, claims, func(*jwt.Token) (any, error) { return key, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
		switch {
		case !ok || err != nil:
			api.t.Errorf("%s %s: the App's JWT does not verify: %v", r.Method, r.URL.Path, err)
		case claims.Issuer != appID:
			api.t.Errorf("the JWT's issuer is %q, want the App ID %q", claims.Issuer, appID)
		case claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute:
			api.t.Errorf("the JWT lives more than the 10 minutes GitHub allows")
		default:
			return true
		}
		return false
	}
	api.routes["GET /orgs/octocat/installation"] = func(w http.ResponseWriter, r *http.Request) {
		if checkJWT(r) {
			contracttest.WriteJSON(w, http.StatusOK, contracttest.LoadFixture(api.t, "github/get-organization-installation").Response)
		}
	}
	api.routes["POST /app/installations/1/access_tokens"] = func(w http.ResponseWriter, r *http.Request) {
		if checkJWT(r) {
			contracttest.WriteJSON(w, http.StatusCreated, tokenResponse)
		}
	}
}

func TestContractGitHubAppInstallationToken(t *testing.T) {
	key, keyPEM := appKey(t)
	documented := contracttest.LoadFixture(t, "github/create-installation-access-token")

	t.Run("installation ID, API of the repository's Enterprise host", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3", "")
		api.appRoutes("123", &key.PublicKey, documented.Response)
		data := map[string][]byte{"githubAppID": []byte("123"), "githubAppInstallationID": []byte("1"), "githubAppPrivateKey": keyPEM}

		tok, err := forge.GitHubToken(t.Context(), data, api.repoURL(), api.srv.Client())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tok).To(Equal("ghs_16C7e42F292c6912E7710c838347Ae178B4a"))
		// The documented token expired in 2016: it is not reused.
		_, err = forge.GitHubToken(t.Context(), data, api.repoURL(), api.srv.Client())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(api.log.All()).To(Equal([]string{
			"POST /api/v3/app/installations/1/access_tokens",
			"POST /api/v3/app/installations/1/access_tokens",
		}))
	})

	t.Run("installation owner, githubAppBaseURL", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3", "")
		// A token that is still valid for an hour is reused.
		fresh := fmt.Appendf(nil, `{"token": "ghs_fresh-installation-token", "expires_at": %q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		api.appRoutes("124", &key.PublicKey, fresh)
		data := map[string][]byte{
			"githubAppID": []byte("124"), "githubAppInstallationOwner": []byte("octocat"),
			"githubAppPrivateKey": keyPEM, "githubAppBaseURL": []byte(api.srv.URL + "/api/v3"),
		}

		for range 2 {
			tok, err := forge.GitHubToken(t.Context(), data, "https://github.com/octocat/Hello-World", api.srv.Client())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tok).To(Equal("ghs_fresh-installation-token"))
		}
		g.Expect(api.log.All()).To(Equal([]string{
			"GET /api/v3/orgs/octocat/installation",
			"POST /api/v3/app/installations/1/access_tokens",
		}))
	})

	t.Run("refused JWT", func(t *testing.T) {
		g := NewWithT(t)
		api := newGitHubAPI(t, "/api/v3", "")
		api.app = true
		api.routes["POST /app/installations/1/access_tokens"] = func(w http.ResponseWriter, _ *http.Request) {
			contracttest.WriteJSON(w, http.StatusUnauthorized, contracttest.LoadFixture(t, "github/unauthorized").Response)
		}
		data := map[string][]byte{"githubAppID": []byte("125"), "githubAppInstallationID": []byte("1"), "githubAppPrivateKey": keyPEM}
		_, err := forge.GitHubToken(t.Context(), data, api.repoURL(), api.srv.Client())
		g.Expect(err).To(MatchError(ContainSubstring("authentication failed (HTTP 401)")))
		g.Expect(err.Error()).To(ContainSubstring("GitHub App"))
	})
}

func TestContractGitHubTokenFromSecret(t *testing.T) {
	_, keyPEM := appKey(t)
	secret := "s3cr3t-value-never-in-errors"
	badKey := []byte("-----BEGIN RSA PRIVATE KEY-----\n" + secret + "\n-----END RSA PRIVATE KEY-----\n")
	repo := "https://github.com/octocat/Hello-World"

	for _, tc := range []struct {
		name    string
		data    map[string][]byte
		token   string
		wantErr string
	}{
		{name: "no secret", data: nil},
		{name: "password", data: map[string][]byte{"username": []byte("git"), "password": []byte(" ghp_pat\n")}, token: "ghp_pat"},
		{name: "token", data: map[string][]byte{"token": []byte("ghp_other")}, token: "ghp_other"},
		{name: "password wins over token", data: map[string][]byte{"password": []byte("a"), "token": []byte("b")}, token: "a"},
		{name: "no key", data: map[string][]byte{"username": []byte(secret)}, wantErr: `neither a "password" nor a "token" key`},
		{name: "app ID not a number", data: map[string][]byte{"githubAppID": []byte(secret)}, wantErr: `"githubAppID" is not the numeric ID`},
		{name: "no installation", data: map[string][]byte{"githubAppID": []byte("1"), "githubAppPrivateKey": keyPEM}, wantErr: `neither "githubAppInstallationID" nor "githubAppInstallationOwner"`},
		{name: "both installations", data: map[string][]byte{"githubAppID": []byte("1"), "githubAppInstallationID": []byte("2"), "githubAppInstallationOwner": []byte("octocat"), "githubAppPrivateKey": keyPEM}, wantErr: "keep one of them"},
		{name: "installation ID not a number", data: map[string][]byte{"githubAppID": []byte("1"), "githubAppInstallationID": []byte(secret), "githubAppPrivateKey": keyPEM}, wantErr: `"githubAppInstallationID" is not the numeric ID`},
		{name: "no private key", data: map[string][]byte{"githubAppID": []byte("1"), "githubAppInstallationID": []byte("2")}, wantErr: `no "githubAppPrivateKey"`},
		{name: "private key not PEM", data: map[string][]byte{"githubAppID": []byte("1"), "githubAppInstallationID": []byte("2"), "githubAppPrivateKey": []byte(secret)}, wantErr: "not a PEM-encoded RSA private key"},
		{name: "private key not RSA", data: map[string][]byte{"githubAppID": []byte("1"), "githubAppInstallationID": []byte("2"), "githubAppPrivateKey": badKey}, wantErr: "not a PEM-encoded RSA private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tok, err := forge.GitHubToken(t.Context(), tc.data, repo, nil)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tok).To(Equal(tc.token))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			g.Expect(err.Error()).NotTo(ContainSubstring("BEGIN"))
		})
	}
}

// --- helpers shared with gitlab_contract_test.go ---

// firstItem is the first item of the fixture's first page.
func firstItem(t *testing.T, fx contracttest.Fixture) map[string]any {
	t.Helper()
	var items []map[string]any
	if err := json.Unmarshal(fx.Pages[0], &items); err != nil || len(items) == 0 {
		t.Fatalf("the first page holds no item: %v", err)
	}
	return items[0]
}

// fullPage is PageSize copies of item, each with another name under nameKey.
func fullPage(t *testing.T, item map[string]any, nameKey string, page int) json.RawMessage {
	t.Helper()
	items := make([]map[string]any, forge.PageSize)
	for i := range items {
		c := make(map[string]any, len(item))
		for k, v := range item {
			c[k] = v
		}
		c[nameKey] = fmt.Sprintf("%s-%d-%d", item[nameKey], page, i)
		items[i] = c
	}
	data, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// pageURL is the address of the request with its page parameter set to page.
func pageURL(r *http.Request, page int) string {
	q := r.URL.Query()
	q.Set("page", strconv.Itoa(page))
	return (&neturl.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}).String()
}

// checkQuery checks the pagination parameters of a listing's request and the other parameters
// the listing must send.
func checkQuery(t *testing.T, r *http.Request, q, want neturl.Values) {
	t.Helper()
	if q.Get("per_page") != strconv.Itoa(forge.PageSize) {
		t.Errorf("%s: per_page is %q, want %d", r.URL.Path, q.Get("per_page"), forge.PageSize)
	}
	for k, v := range want {
		if q.Get(k) != v[0] {
			t.Errorf("%s: %s is %q, want %q", r.URL.Path, k, q.Get(k), v[0])
		}
	}
}
