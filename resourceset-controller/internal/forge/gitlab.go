package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// SlugKey is the Extra key of a GitLab item's slug: for a branch, a tag or a merge request's
// source branch, the ref as GitLab CI's CI_COMMIT_REF_SLUG writes it; for an environment, the
// environment's own slug (CI_ENVIRONMENT_SLUG).
const SlugKey = "slug"

// NewGitLab returns the Lister of a project on GitLab.com or on a self-managed GitLab, through
// GitLab's REST API (v4) with its official Go client. The URL is
// https://gitlab.com/<group>/<project> or https://<host>/<group>/<project>, with as many
// subgroups as the project has; the API is https://<host>/api/v4. A URL of any other shape is an
// *inputs.InvalidURLError. An empty Token lists anonymously, which GitLab allows for public
// projects only.
//
// It lists branches and tags (name, commit, slug), the opened merge requests (IID, head commit,
// source branch, slug, title, author and labels) and the environments that have a deployment to
// export (see gitLabLister.environments).
func NewGitLab(opts Options) (Lister, error) {
	project, err := parseGitLabURL(opts.URL)
	if err != nil {
		return nil, err
	}
	// Retries are the controller's (with its backoff), so that one listing costs one request
	// per page.
	clientOpts := []gitlab.ClientOptionFunc{gitlab.WithoutRetries()}
	if opts.HTTPClient != nil {
		clientOpts = append(clientOpts, gitlab.WithHTTPClient(opts.HTTPClient))
	}
	if !project.dotCom {
		clientOpts = append(clientOpts, gitlab.WithBaseURL(project.scheme+"://"+project.host))
	}
	client, err := gitlab.NewClient(opts.Token, clientOpts...)
	if err != nil {
		return nil, &inputs.InvalidURLError{URL: project.display, Reason: err.Error()}
	}
	return &gitLabLister{client: client, project: project}, nil
}

// gitLabProject is a GitLab project URL, parsed.
type gitLabProject struct {
	scheme, host string
	// path is the project's full path, e.g. group/subgroup/app.
	path string
	// dotCom is gitlab.com, the client's default address.
	dotCom bool
	// display is the URL without its credentials, for messages.
	display string
}

// parseGitLabURL parses scheme://host/group[/subgroup...]/project, with an optional ".git" or
// "/" at the end.
func parseGitLabURL(raw string) (gitLabProject, error) {
	r, err := parseRepoURL(raw, "https://<host>/<group>/<project>")
	if err != nil {
		return gitLabProject{}, err
	}
	if len(r.segments) < 2 {
		return gitLabProject{}, r.invalid("the path of a GitLab project URL is /<group>/<project>, with its subgroups if any")
	}
	for _, p := range r.segments {
		if p == "" || p == "-" {
			return gitLabProject{}, r.invalid("the path of a GitLab project URL is /<group>/<project>, with its subgroups if any, and nothing after the project")
		}
	}
	return gitLabProject{
		scheme:  r.Scheme,
		host:    r.Host,
		path:    strings.Join(r.segments, "/"),
		dotCom:  strings.EqualFold(r.Hostname(), "gitlab.com"),
		display: r.display,
	}, nil
}

type gitLabLister struct {
	client  *gitlab.Client
	project gitLabProject
}

func (g *gitLabLister) List(ctx context.Context, kind Kind) ([]Item, error) {
	switch kind {
	case Branches:
		return g.branches(ctx)
	case Tags:
		return g.tags(ctx)
	case Requests:
		return g.mergeRequests(ctx)
	case Environments:
		return g.environments(ctx)
	}
	return nil, fmt.Errorf("%s: GitLab has no kind %d to list", g.project.display, kind)
}

func (g *gitLabLister) branches(ctx context.Context) ([]Item, error) {
	branches, err := gitLabPages(ctx, "branches of "+g.project.display, func(o gitlab.ListOptions) ([]*gitlab.Branch, *gitlab.Response, error) {
		return g.client.Branches.ListBranches(g.project.path, &gitlab.ListBranchesOptions{ListOptions: o}, gitlab.WithContext(ctx))
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(branches))
	for _, b := range branches {
		items = append(items, Item{
			ID:     inputs.ID(b.Name),
			SHA:    commitID(b.Commit),
			Branch: b.Name,
			Extra:  map[string]any{SlugKey: refSlug(b.Name)},
		})
	}
	return items, nil
}

func (g *gitLabLister) tags(ctx context.Context) ([]Item, error) {
	tags, err := gitLabPages(ctx, "tags of "+g.project.display, func(o gitlab.ListOptions) ([]*gitlab.Tag, *gitlab.Response, error) {
		return g.client.Tags.ListTags(g.project.path, &gitlab.ListTagsOptions{ListOptions: o}, gitlab.WithContext(ctx))
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(tags))
	for _, t := range tags {
		items = append(items, Item{
			ID:    inputs.ID(t.Name),
			SHA:   commitID(t.Commit),
			Tag:   t.Name,
			Extra: map[string]any{SlugKey: refSlug(t.Name)},
		})
	}
	return items, nil
}

func (g *gitLabLister) mergeRequests(ctx context.Context) ([]Item, error) {
	mrs, err := gitLabPages(ctx, "opened merge requests of "+g.project.display, func(o gitlab.ListOptions) ([]*gitlab.BasicMergeRequest, *gitlab.Response, error) {
		opened := "opened"
		return g.client.MergeRequests.ListProjectMergeRequests(g.project.path,
			&gitlab.ListProjectMergeRequestsOptions{State: &opened, ListOptions: o}, gitlab.WithContext(ctx))
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(mrs))
	for _, mr := range mrs {
		var author string
		if mr.Author != nil {
			author = mr.Author.Username
		}
		var labels []string
		if len(mr.Labels) > 0 {
			labels = append(labels, mr.Labels...)
		}
		items = append(items, Item{
			ID:     strconv.Itoa(mr.IID),
			SHA:    mr.SHA,
			Branch: mr.SourceBranch,
			Title:  mr.Title,
			Author: author,
			Labels: labels,
			Extra:  map[string]any{SlugKey: refSlug(mr.SourceBranch)},
		})
	}
	return items, nil
}

// environments lists every environment of the project, stopped ones included (a deployment may
// start a stopped environment again), and exports those with a deployment to follow, found
// with the Deployments API among the environment's newest PageSize deployments: the newest
// running one (so that a deployment job can have the provider reconciled while it runs, before
// GitLab marks the environment available), else, for an available environment, the newest
// successful one. An environment with neither, e.g. stopped and not being deployed, is left
// out. This costs one request per environment beyond the listing.
//
// The item of an environment is its ID, the deployment's commit, ref (as Branch) and user (as
// Author), the environment's name (as Title and Extra[EnvironmentKey]) and its slug
// (Extra[SlugKey]).
func (g *gitLabLister) environments(ctx context.Context) ([]Item, error) {
	envs, err := gitLabPages(ctx, "environments of "+g.project.display, func(o gitlab.ListOptions) ([]*gitlab.Environment, *gitlab.Response, error) {
		return g.client.Environments.ListEnvironments(g.project.path, &gitlab.ListEnvironmentsOptions{ListOptions: o}, gitlab.WithContext(ctx))
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(envs))
	for _, env := range envs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := g.deploymentOf(ctx, env)
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		sha, ref := d.SHA, d.Ref
		if sha == "" {
			sha = commitID(d.Deployable.Commit)
		}
		if ref == "" {
			ref = d.Deployable.Ref
		}
		var author string
		if d.User != nil {
			author = d.User.Username
		}
		items = append(items, Item{
			ID:     strconv.Itoa(env.ID),
			SHA:    sha,
			Branch: ref,
			Title:  env.Name,
			Author: author,
			Extra:  map[string]any{EnvironmentKey: env.Name, SlugKey: env.Slug},
		})
	}
	return items, nil
}

// deploymentOf is the deployment an environment's item follows, nil when there is none.
func (g *gitLabLister) deploymentOf(ctx context.Context, env *gitlab.Environment) (*gitlab.Deployment, error) {
	createdAt, desc := "created_at", "desc"
	deployments, _, err := g.client.Deployments.ListProjectDeployments(g.project.path, &gitlab.ListProjectDeploymentsOptions{
		ListOptions: gitlab.ListOptions{PerPage: PageSize, Page: 1},
		OrderBy:     &createdAt,
		Sort:        &desc,
		Environment: &env.Name,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, gitLabError(fmt.Sprintf("listing the deployments of environment %q of %s", env.Name, g.project.display), err)
	}
	for _, d := range deployments {
		if d.Status == "running" || env.State == "available" && d.Status == "success" {
			return d, nil
		}
	}
	return nil, nil
}

// gitLabPages asks for every page of a listing, PageSize items at a time, following the
// X-Next-Page header.
func gitLabPages[T any](ctx context.Context, what string, page func(gitlab.ListOptions) ([]T, *gitlab.Response, error)) ([]T, error) {
	return allPages(ctx, "GitLab", what, PageSize, func(n int) ([]T, int, error) {
		items, resp, err := page(gitlab.ListOptions{PerPage: PageSize, Page: n})
		if err != nil {
			return nil, 0, gitLabError("listing the "+what, err)
		}
		return items, resp.NextPage, nil
	})
}

// gitLabError says what went wrong with a request to GitLab's API: the status and what it
// usually means, never the body GitLab sent nor the credentials.
func gitLabError(doing string, err error) error {
	var resp *gitlab.ErrorResponse
	switch {
	case errors.Is(err, gitlab.ErrNotFound):
		return statusError(doing, "GitLab", http.StatusNotFound)
	case errors.As(err, &resp) && resp.Response != nil:
		return statusError(doing, "GitLab", resp.Response.StatusCode)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

func commitID(c *gitlab.Commit) string {
	if c == nil {
		return ""
	}
	return c.ID
}

// refSlugMax is the length GitLab cuts a ref slug at.
const refSlugMax = 63

// refSlug is a ref as GitLab CI's CI_COMMIT_REF_SLUG: lower case, every character other than
// a-z and 0-9 replaced by "-", cut at 63 bytes, without "-" at either end.
func refSlug(ref string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(ref) {
		if b.Len() == refSlugMax {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
