package pullrequest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLabForge speaks GitLab's REST API (v4) through its official client.
type gitLabForge struct {
	client *gitlab.Client
	// project is the project's full path, e.g. group/subgroup/app.
	project string
	repo    repoURL
	token   string
}

func newGitLab(repo repoURL, api *apiURL, token string, hc *http.Client) (Forge, error) {
	segments := repo.segments
	// Retries are the controller's, with its backoff: one call, one request each.
	opts := []gitlab.ClientOptionFunc{gitlab.WithoutRetries(), gitlab.WithHTTPClient(hc)}
	switch {
	case api != nil:
		// A GitLab under a sub-path: the project's path is what follows the prefix.
		prefix := api.prefix("/api/v4")
		if len(segments) > len(prefix) && equalFold(segments[:len(prefix)], prefix) {
			segments = segments[len(prefix):]
		}
		opts = append(opts, gitlab.WithBaseURL(api.withPath("/api/v4").String()))
	case !strings.EqualFold(repo.host, "gitlab.com"):
		opts = append(opts, gitlab.WithBaseURL(repo.base(0).String()))
	}
	if len(segments) < 2 {
		return nil, invalidf("%s: the path of a GitLab project URL is /<group>/<project>, with its subgroups if any, after the prefix of the API URL", repo)
	}
	client, err := gitlab.NewClient(token, opts...)
	if err != nil {
		return nil, invalidf("the GitLab API address of %s: %v", repo, err)
	}
	return &gitLabForge{client: client, project: strings.Join(segments, "/"), repo: repo, token: token}, nil
}

func equalFold(a, b []string) bool {
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

func gitLabPullRequest(mr *gitlab.BasicMergeRequest) PullRequest {
	state := Open // opened, or locked while it merges
	switch mr.State {
	case "merged":
		state = Merged
	case "closed":
		state = Closed
	}
	return PullRequest{
		Number:  int64(mr.IID),
		URL:     mr.WebURL,
		State:   state,
		Head:    mr.SourceBranch,
		Base:    mr.TargetBranch,
		HeadSHA: mr.SHA,
	}
}

func (g *gitLabForge) Ensure(ctx context.Context, req Request) (PullRequest, bool, error) {
	if err := req.check(); err != nil {
		return PullRequest{}, false, err
	}
	found, err := g.findOpen(ctx, req.Head, req.Base)
	if err != nil {
		return PullRequest{}, false, err
	}
	if found != nil {
		if found.Title == req.Title && found.Description == req.Body {
			return gitLabPullRequest(found), false, nil
		}
		op := fmt.Sprintf("updating merge request !%d of %s", found.IID, g.repo)
		updated, _, err := g.client.MergeRequests.UpdateMergeRequest(g.project, found.IID, &gitlab.UpdateMergeRequestOptions{
			Title:       gitlab.Ptr(req.Title),
			Description: gitlab.Ptr(req.Body),
		}, gitlab.WithContext(ctx))
		if err != nil {
			return PullRequest{}, false, g.error(op, writing, err)
		}
		return gitLabPullRequest(&updated.BasicMergeRequest), false, nil
	}

	op := fmt.Sprintf("opening a merge request from %q into %q of %s", req.Head, req.Base, g.repo)
	create := &gitlab.CreateMergeRequestOptions{
		Title:        gitlab.Ptr(req.Title),
		Description:  gitlab.Ptr(req.Body),
		SourceBranch: gitlab.Ptr(req.Head),
		TargetBranch: gitlab.Ptr(req.Base),
	}
	if len(req.Labels) > 0 {
		// GitLab takes them with the merge request, creating those that do not exist.
		labels := gitlab.LabelOptions(req.Labels)
		create.Labels = &labels
	}
	opened, _, err := g.client.MergeRequests.CreateMergeRequest(g.project, create, gitlab.WithContext(ctx))
	if err != nil {
		return PullRequest{}, false, g.error(op, writing, err)
	}
	return gitLabPullRequest(&opened.BasicMergeRequest), true, nil
}

// findOpen asks for the opened merge request from head, a branch of the project itself, into
// base: GitLab keeps at most one open.
func (g *gitLabForge) findOpen(ctx context.Context, head, base string) (*gitlab.BasicMergeRequest, error) {
	op := fmt.Sprintf("looking for an open merge request from %q into %q of %s", head, base, g.repo)
	mrs, _, err := g.client.MergeRequests.ListProjectMergeRequests(g.project, &gitlab.ListProjectMergeRequestsOptions{
		State:        gitlab.Ptr("opened"),
		SourceBranch: gitlab.Ptr(head),
		TargetBranch: gitlab.Ptr(base),
		ListOptions:  gitlab.ListOptions{PerPage: 100},
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.error(op, reading, err)
	}
	for _, mr := range mrs {
		// A fork's branch of the same name is another source.
		if mr.SourceBranch == head && mr.TargetBranch == base && mr.SourceProjectID == mr.TargetProjectID &&
			(mr.State == "opened" || mr.State == "locked") {
			return mr, nil
		}
	}
	return nil, nil
}

func (g *gitLabForge) Get(ctx context.Context, n int64) (PullRequest, error) {
	op := fmt.Sprintf("reading merge request !%d of %s", n, g.repo)
	mr, _, err := g.client.MergeRequests.GetMergeRequest(g.project, int(n), nil, gitlab.WithContext(ctx))
	if err != nil {
		return PullRequest{}, g.error(op, reading, err)
	}
	return gitLabPullRequest(&mr.BasicMergeRequest), nil
}

// error explains an error of GitLab's client: the status and GitLab's message, never its whole
// answer nor the token.
func (g *gitLabForge) error(op string, act action, err error) error {
	var resp *gitlab.ErrorResponse
	switch {
	case errors.Is(err, gitlab.ErrNotFound):
		return apiError(GitLab, op, act, http.StatusNotFound, "", g.token)
	case errors.As(err, &resp) && resp.Response != nil:
		var body struct {
			Message any `json:"message"`
			Error   any `json:"error"`
		}
		var msg string
		if json.Unmarshal(resp.Body, &body) == nil {
			// "message" is a string, or a list or an object of validation messages.
			for _, m := range []any{body.Message, body.Error} {
				if s, ok := m.(string); ok && s != "" {
					msg = s
					break
				}
				if m != nil {
					if data, err := json.Marshal(m); err == nil {
						msg = string(data)
						break
					}
				}
			}
		}
		return apiError(GitLab, op, act, resp.Response.StatusCode, msg, g.token)
	case errors.Is(err, ErrAnswerTooLarge):
		return fmt.Errorf("%s: %w", op, ErrAnswerTooLarge)
	}
	return fmt.Errorf("%s: %w", op, err)
}
