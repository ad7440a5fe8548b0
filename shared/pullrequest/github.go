package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v73/github"
)

// gitHubForge speaks GitHub's REST API through its official client, go-github.
type gitHubForge struct {
	client      *github.Client
	owner, name string
	repo        repoURL
	token       string
}

func newGitHub(repo repoURL, api *apiURL, token string, hc *http.Client) (Forge, error) {
	n := len(repo.segments)
	// go-github copies the client it is given.
	client := github.NewClient(hc).WithAuthToken(token)
	var base string
	switch {
	case api != nil:
		base = api.String() + "/"
	case !strings.EqualFold(repo.host, "github.com") && !strings.EqualFold(repo.host, "www.github.com"):
		// A GitHub Enterprise Server: its API is under /api/v3 (go-github adds it).
		base = repo.base(n-2).String() + "/"
	}
	if base != "" {
		var err error
		if client, err = client.WithEnterpriseURLs(base, base); err != nil {
			return nil, invalidf("the GitHub API address %s: %v", base, err)
		}
	}
	return &gitHubForge{client: client, owner: repo.segments[n-2], name: repo.segments[n-1], repo: repo, token: token}, nil
}

func (g *gitHubForge) pullRequest(p *github.PullRequest) PullRequest {
	state := Open
	switch {
	case p.GetMerged():
		state = Merged
	case p.GetState() == "closed":
		state = Closed
	}
	return PullRequest{
		Number:  int64(p.GetNumber()),
		URL:     p.GetHTMLURL(),
		State:   state,
		Head:    p.GetHead().GetRef(),
		Base:    p.GetBase().GetRef(),
		HeadSHA: p.GetHead().GetSHA(),
	}
}

func (g *gitHubForge) Ensure(ctx context.Context, req Request) (PullRequest, bool, error) {
	if err := req.check(); err != nil {
		return PullRequest{}, false, err
	}
	found, err := g.findOpen(ctx, req.Head, req.Base)
	if err != nil {
		return PullRequest{}, false, err
	}
	if found != nil {
		if found.GetTitle() == req.Title && found.GetBody() == req.Body {
			return g.pullRequest(found), false, nil
		}
		op := fmt.Sprintf("updating pull request #%d of %s", found.GetNumber(), g.repo)
		updated, _, err := g.client.PullRequests.Edit(ctx, g.owner, g.name, found.GetNumber(),
			&github.PullRequest{Title: github.Ptr(req.Title), Body: github.Ptr(req.Body)})
		if err != nil {
			return PullRequest{}, false, g.error(op, writing, err)
		}
		return g.pullRequest(updated), false, nil
	}

	op := fmt.Sprintf("opening a pull request from %q into %q of %s", req.Head, req.Base, g.repo)
	opened, _, err := g.client.PullRequests.Create(ctx, g.owner, g.name, &github.NewPullRequest{
		Title: github.Ptr(req.Title),
		Head:  github.Ptr(req.Head),
		Base:  github.Ptr(req.Base),
		Body:  github.Ptr(req.Body),
	})
	if err != nil {
		return PullRequest{}, false, g.error(op, writing, err)
	}
	pr := g.pullRequest(opened)
	if len(req.Labels) > 0 {
		// A pull request's labels are its issue's.
		op := fmt.Sprintf("adding labels to pull request #%d of %s", opened.GetNumber(), g.repo)
		if _, _, err := g.client.Issues.AddLabelsToIssue(ctx, g.owner, g.name, opened.GetNumber(), req.Labels); err != nil {
			return pr, true, &LabelsError{PullRequest: pr, Err: g.error(op, writing, err)}
		}
	}
	return pr, true, nil
}

// findOpen asks for the open pull request from the repository owner's head into base: GitHub
// keeps at most one open.
func (g *gitHubForge) findOpen(ctx context.Context, head, base string) (*github.PullRequest, error) {
	op := fmt.Sprintf("looking for an open pull request from %q into %q of %s", head, base, g.repo)
	pulls, _, err := g.client.PullRequests.List(ctx, g.owner, g.name, &github.PullRequestListOptions{
		State:       "open",
		Head:        g.owner + ":" + head,
		Base:        base,
		ListOptions: github.ListOptions{PerPage: 100},
	})
	if err != nil {
		return nil, g.error(op, reading, err)
	}
	for _, p := range pulls {
		if p.GetHead().GetRef() != head || p.GetBase().GetRef() != base || p.GetState() != "open" {
			continue
		}
		// A fork's branch of the same name is another head.
		if hr, br := p.GetHead().GetRepo(), p.GetBase().GetRepo(); hr != nil && br != nil && hr.GetID() != br.GetID() {
			continue
		}
		return p, nil
	}
	return nil, nil
}

func (g *gitHubForge) Get(ctx context.Context, n int64) (PullRequest, error) {
	op := fmt.Sprintf("reading pull request #%d of %s", n, g.repo)
	p, _, err := g.client.PullRequests.Get(ctx, g.owner, g.name, int(n))
	if err != nil {
		return PullRequest{}, g.error(op, reading, err)
	}
	return g.pullRequest(p), nil
}

// error explains an error of go-github: the status and GitHub's message, never its whole answer
// nor the token.
func (g *gitHubForge) error(op string, act action, err error) error {
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var resp *github.ErrorResponse
	switch {
	case errors.As(err, &rate):
		return fmt.Errorf("%s: GitHub's rate limit is exhausted until %s: retry then", op, rate.Rate.Reset.UTC().Format(time.RFC3339))
	case errors.As(err, &abuse):
		if d := abuse.RetryAfter; d != nil {
			return fmt.Errorf("%s: GitHub's secondary rate limit applies: retry after %s", op, d.Round(time.Second))
		}
		return fmt.Errorf("%s: GitHub's secondary rate limit applies: retry later", op)
	case errors.As(err, &resp) && resp.Response != nil:
		msg := resp.Message
		// A validation failure (422) tells its reason in its errors, e.g. "A pull request
		// already exists for octocat:new-topic."
		for _, e := range resp.Errors {
			if e.Message != "" {
				msg += ": " + e.Message
				break
			}
		}
		return apiError(GitHub, op, act, resp.Response.StatusCode, msg, g.token)
	case errors.Is(err, ErrAnswerTooLarge):
		return fmt.Errorf("%s: %w", op, ErrAnswerTooLarge)
	}
	// Transport errors (the request's URL holds no credentials) and the context's, wrapped so
	// that errors.Is still tells a cancelled context.
	return fmt.Errorf("%s: %w", op, err)
}
