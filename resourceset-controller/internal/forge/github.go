package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v73/github"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// NewGitHub returns the Lister of a repository on GitHub or on a GitHub Enterprise Server,
// through GitHub's REST API with its official Go client (go-github). The URL is
// https://github.com/<owner>/<repo> (the API is then https://api.github.com) or, for any other
// host, https://<host>/<owner>/<repo> (the API is then https://<host>/api/v3). A URL of any
// other shape is an *inputs.InvalidURLError. An empty Token lists anonymously, which GitHub
// allows for public repositories only.
//
// It lists branches (name and head commit), tags (name and commit) and the open pull requests
// (number, head commit and branch, title, author and labels). GitHub has no environments to
// list.
func NewGitHub(opts Options) (Lister, error) {
	repo, err := parseGitHubURL(opts.URL)
	if err != nil {
		return nil, err
	}
	// go-github copies the http.Client it is given, so the caller's stays as it is.
	client := github.NewClient(opts.HTTPClient)
	if opts.Token != "" {
		client = client.WithAuthToken(opts.Token)
	}
	if repo.enterprise {
		base := repo.scheme + "://" + repo.host + "/api/v3/"
		if client, err = client.WithEnterpriseURLs(base, base); err != nil {
			return nil, &inputs.InvalidURLError{URL: repo.display, Reason: err.Error()}
		}
	}
	return &gitHubLister{client: client, repo: repo}, nil
}

// gitHubRepo is a GitHub repository URL, parsed.
type gitHubRepo struct {
	scheme, host, owner, name string
	// enterprise is a host other than github.com: a GitHub Enterprise Server.
	enterprise bool
	// display is the URL without its credentials, for messages.
	display string
}

// parseGitHubURL parses scheme://host/owner/repo, with an optional ".git" or "/" at the end.
func parseGitHubURL(raw string) (gitHubRepo, error) {
	r, err := parseRepoURL(raw, "https://<host>/<owner>/<repo>")
	if err != nil {
		return gitHubRepo{}, err
	}
	if len(r.segments) != 2 || r.segments[0] == "" || r.segments[1] == "" {
		return gitHubRepo{}, r.invalid("the path of a GitHub repository URL is /<owner>/<repo>")
	}
	host := strings.ToLower(r.Hostname())
	return gitHubRepo{
		scheme:     r.Scheme,
		host:       r.Host,
		owner:      r.segments[0],
		name:       r.segments[1],
		enterprise: host != "github.com" && host != "www.github.com",
		display:    r.display,
	}, nil
}

type gitHubLister struct {
	client *github.Client
	repo   gitHubRepo
}

func (g *gitHubLister) List(ctx context.Context, kind Kind) ([]Item, error) {
	switch kind {
	case Branches:
		return g.branches(ctx)
	case Tags:
		return g.tags(ctx)
	case Requests:
		return g.pullRequests(ctx)
	}
	return nil, fmt.Errorf("%s: GitHub has no environments to list; GitLabEnvironment is GitLab's", g.repo.display)
}

func (g *gitHubLister) branches(ctx context.Context) ([]Item, error) {
	branches, err := gitHubPages(ctx, "branches of "+g.repo.display, func(o github.ListOptions) ([]*github.Branch, *github.Response, error) {
		return g.client.Repositories.ListBranches(ctx, g.repo.owner, g.repo.name, &github.BranchListOptions{ListOptions: o})
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(branches))
	for _, b := range branches {
		items = append(items, Item{
			ID:     inputs.ID(b.GetName()),
			SHA:    b.GetCommit().GetSHA(),
			Branch: b.GetName(),
		})
	}
	return items, nil
}

func (g *gitHubLister) tags(ctx context.Context) ([]Item, error) {
	tags, err := gitHubPages(ctx, "tags of "+g.repo.display, func(o github.ListOptions) ([]*github.RepositoryTag, *github.Response, error) {
		return g.client.Repositories.ListTags(ctx, g.repo.owner, g.repo.name, &o)
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(tags))
	for _, t := range tags {
		items = append(items, Item{
			ID:  inputs.ID(t.GetName()),
			SHA: t.GetCommit().GetSHA(),
			Tag: t.GetName(),
		})
	}
	return items, nil
}

func (g *gitHubLister) pullRequests(ctx context.Context) ([]Item, error) {
	prs, err := gitHubPages(ctx, "open pull requests of "+g.repo.display, func(o github.ListOptions) ([]*github.PullRequest, *github.Response, error) {
		return g.client.PullRequests.List(ctx, g.repo.owner, g.repo.name, &github.PullRequestListOptions{State: "open", ListOptions: o})
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(prs))
	for _, pr := range prs {
		var labels []string
		for _, l := range pr.Labels {
			labels = append(labels, l.GetName())
		}
		items = append(items, Item{
			ID:     strconv.Itoa(pr.GetNumber()),
			SHA:    pr.GetHead().GetSHA(),
			Branch: pr.GetHead().GetRef(),
			Title:  pr.GetTitle(),
			Author: pr.GetUser().GetLogin(),
			Labels: labels,
		})
	}
	return items, nil
}

// gitHubPages asks for every page of a listing, PageSize items at a time, following the page
// numbers go-github reads from the Link header.
func gitHubPages[T any](ctx context.Context, what string, page func(github.ListOptions) ([]T, *github.Response, error)) ([]T, error) {
	return allPages(ctx, "GitHub", what, PageSize, func(n int) ([]T, int, error) {
		items, resp, err := page(github.ListOptions{PerPage: PageSize, Page: n})
		if err != nil {
			return nil, 0, gitHubError("listing the "+what, err)
		}
		return items, resp.NextPage, nil
	})
}

// gitHubError says what went wrong with a request to GitHub's API: the status and what it
// usually means, never the body GitHub sent nor the credentials.
func gitHubError(doing string, err error) error {
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var resp *github.ErrorResponse
	switch {
	case errors.As(err, &rate):
		return fmt.Errorf("%s: GitHub's rate limit is exhausted until %s", doing, rate.Rate.Reset.UTC().Format(time.RFC3339))
	case errors.As(err, &abuse):
		if d := abuse.RetryAfter; d != nil {
			return fmt.Errorf("%s: GitHub's secondary rate limit applies, retry after %s", doing, d.Round(time.Second))
		}
		return fmt.Errorf("%s: GitHub's secondary rate limit applies", doing)
	case errors.As(err, &resp) && resp.Response != nil:
		return statusError(doing, "GitHub", resp.Response.StatusCode)
	}
	// Transport errors (the request's URL holds no credentials) and ctx's errors, wrapped so that
	// errors.Is still tells a cancelled context.
	return fmt.Errorf("%s: %w", doing, err)
}

// statusError explains an HTTP error status of a forge's API.
func statusError(doing, forge string, status int) error {
	switch status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: authentication failed (HTTP 401): %s refused the credentials from spec.secretRef, or needs some", doing, forge)
	case http.StatusForbidden:
		return fmt.Errorf("%s: access denied (HTTP 403): the credentials lack the permission, or %s limits the requests", doing, forge)
	case http.StatusNotFound:
		return fmt.Errorf("%s: not found (HTTP 404): check the URL, and that the credentials can read the repository", doing)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%s: too many requests (HTTP 429): %s limits the requests", doing, forge)
	}
	return fmt.Errorf("%s: %s answered HTTP %d %s", doing, forge, status, http.StatusText(status))
}
