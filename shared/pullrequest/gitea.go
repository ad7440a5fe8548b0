package pullrequest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// giteaPageSize is the page size asked of Gitea: its default maximum (MAX_RESPONSE_ITEMS).
const giteaPageSize = 50

// giteaMaxPages bounds the search for an open pull request: 1,000 open pull requests into the
// same base branch.
const giteaMaxPages = 20

// giteaForge speaks Gitea's REST API (/api/v1), which Forgejo serves too.
type giteaForge struct {
	api         *url.URL // https://host[/prefix]/api/v1
	owner, name string
	repo        repoURL
	token       string
	http        *http.Client
}

func newGitea(repo repoURL, api *apiURL, token string, hc *http.Client) (Forge, error) {
	n := len(repo.segments)
	g := &giteaForge{owner: repo.segments[n-2], name: repo.segments[n-1], repo: repo, token: token, http: hc}
	if api != nil {
		g.api = api.withPath("/api/v1")
	} else {
		g.api = repo.base(n-2).JoinPath("api", "v1")
	}
	return g, nil
}

// giteaPull is the part of Gitea's PullRequest that is read.
type giteaPull struct {
	Number  int64  `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Merged  bool   `json:"merged"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	Head    struct {
		Ref    string `json:"ref"`
		SHA    string `json:"sha"`
		RepoID int64  `json:"repo_id"`
	} `json:"head"`
	Base struct {
		Ref    string `json:"ref"`
		RepoID int64  `json:"repo_id"`
	} `json:"base"`
}

func (p giteaPull) pullRequest() PullRequest {
	state := Open
	switch {
	case p.Merged:
		state = Merged
	case p.State == "closed":
		state = Closed
	}
	return PullRequest{Number: p.Number, URL: p.HTMLURL, State: state, Head: p.Head.Ref, Base: p.Base.Ref, HeadSHA: p.Head.SHA}
}

func (g *giteaForge) Ensure(ctx context.Context, req Request) (PullRequest, bool, error) {
	if err := req.check(); err != nil {
		return PullRequest{}, false, err
	}
	found, err := g.findOpen(ctx, req.Head, req.Base)
	if err != nil {
		return PullRequest{}, false, err
	}
	if found != nil {
		if found.Title == req.Title && found.Body == req.Body {
			return found.pullRequest(), false, nil
		}
		var updated giteaPull
		op := fmt.Sprintf("updating pull request #%d of %s", found.Number, g.repo)
		body := map[string]any{"title": req.Title, "body": req.Body}
		if err := g.do(ctx, op, writing, http.MethodPatch, g.repoPath("pulls", strconv.FormatInt(found.Number, 10)), nil, body, &updated); err != nil {
			return PullRequest{}, false, err
		}
		return updated.pullRequest(), false, nil
	}

	var opened giteaPull
	op := fmt.Sprintf("opening a pull request from %q into %q of %s", req.Head, req.Base, g.repo)
	body := map[string]any{"head": req.Head, "base": req.Base, "title": req.Title, "body": req.Body}
	if err := g.do(ctx, op, writing, http.MethodPost, g.repoPath("pulls"), nil, body, &opened); err != nil {
		return PullRequest{}, false, err
	}
	pr := opened.pullRequest()
	if len(req.Labels) > 0 {
		// By name: Gitea adds those of the repository and of its organization, and skips the
		// others.
		op := fmt.Sprintf("adding labels to pull request #%d of %s", opened.Number, g.repo)
		path := g.repoPath("issues", strconv.FormatInt(opened.Number, 10), "labels")
		if err := g.do(ctx, op, writing, http.MethodPost, path, nil, map[string]any{"labels": req.Labels}, nil); err != nil {
			return pr, true, &LabelsError{PullRequest: pr, Err: err}
		}
	}
	return pr, true, nil
}

// findOpen looks for the open pull request from head, a branch of the repository itself, into
// base; nil when there is none.
func (g *giteaForge) findOpen(ctx context.Context, head, base string) (*giteaPull, error) {
	op := fmt.Sprintf("looking for an open pull request from %q into %q of %s", head, base, g.repo)
	for page := 1; page <= giteaMaxPages; page++ {
		q := url.Values{"state": {"open"}, "base_branch": {base}, "page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(giteaPageSize)}}
		var pulls []giteaPull
		if err := g.do(ctx, op, reading, http.MethodGet, g.repoPath("pulls"), q, nil, &pulls); err != nil {
			return nil, err
		}
		for i, p := range pulls {
			// A fork's branch of the same name is another head.
			if p.Head.Ref == head && p.Base.Ref == base && p.Head.RepoID == p.Base.RepoID && p.State == "open" {
				return &pulls[i], nil
			}
		}
		if len(pulls) < giteaPageSize {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("%s: more than %d open pull requests into %q: close some", op, giteaMaxPages*giteaPageSize, base)
}

func (g *giteaForge) Get(ctx context.Context, n int64) (PullRequest, error) {
	var p giteaPull
	op := fmt.Sprintf("reading pull request #%d of %s", n, g.repo)
	if err := g.do(ctx, op, reading, http.MethodGet, g.repoPath("pulls", strconv.FormatInt(n, 10)), nil, nil, &p); err != nil {
		return PullRequest{}, err
	}
	return p.pullRequest(), nil
}

// repoPath is the API's URL of the repository's path elements.
func (g *giteaForge) repoPath(elem ...string) *url.URL {
	return g.api.JoinPath(append([]string{"repos", g.owner, g.name}, elem...)...)
}

// do sends one request, with body encoded as JSON when not nil, and decodes a successful answer
// into out when not nil.
func (g *giteaForge) do(ctx context.Context, op string, act action, method string, u *url.URL, query url.Values, body, out any) error {
	if query != nil {
		u.RawQuery = query.Encode()
	}
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "token "+g.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.http.Do(req)
	if err != nil {
		// The URL holds no credentials; the error may be the context's.
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil && !(errors.Is(err, ErrAnswerTooLarge) && resp.StatusCode/100 != 2) {
		return fmt.Errorf("%s: reading the answer: %w", op, err)
	}
	if resp.StatusCode/100 != 2 {
		var msg struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(answer, &msg)
		return apiError(Gitea, op, act, resp.StatusCode, msg.Message, g.token)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("%s: the answer is not the JSON Gitea sends: is %s the API of a Gitea?", op, g.api.Redacted())
	}
	return nil
}
