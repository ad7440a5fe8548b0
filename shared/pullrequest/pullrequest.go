package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Provider is the kind of forge a repository is on.
type Provider string

const (
	// Gitea is Gitea or Forgejo, through its REST API (/api/v1).
	Gitea Provider = "gitea"
	// GitHub is github.com or a GitHub Enterprise Server, through its REST API.
	GitHub Provider = "github"
	// GitLab is gitlab.com or a self-managed GitLab, through its REST API (/api/v4).
	GitLab Provider = "gitlab"
)

// name is the provider's name for messages.
func (p Provider) name() string {
	switch p {
	case Gitea:
		return "Gitea"
	case GitHub:
		return "GitHub"
	case GitLab:
		return "GitLab"
	}
	return string(p)
}

// Options say which repository to open pull requests on, and how.
type Options struct {
	// Provider is the forge: Gitea, GitHub or GitLab.
	Provider Provider
	// RepoURL is the repository's Git URL, as a GitRepository has it:
	// http(s)://host[/prefix]/owner/repo[.git], or ssh://[user@]host[:port]/owner/repo[.git] or
	// user@host:owner/repo[.git], which stand for https://host/owner/repo. It carries no
	// credentials: the token is Token. On GitLab, owner is a group with its subgroups, if any.
	RepoURL string
	// APIURL is the forge's API address, when the default derived from RepoURL is not it: with or
	// without the API's path (/api/v1 on Gitea, /api/v3 on a GitHub Enterprise Server, /api/v4 on
	// GitLab), which is added when missing. By default it is https://api.github.com for
	// github.com, https://host[/prefix]/api/v3 for another GitHub host,
	// https://host[/prefix]/api/v1 on Gitea and https://host/api/v4 on GitLab. A GitLab served
	// under a sub-path needs APIURL (e.g. https://host/gitlab), since its nested groups keep the
	// RepoURL from telling the prefix; the prefix is then removed from RepoURL's path.
	APIURL string
	// Token authenticates every request: a personal, project or installation access token that
	// may open and update pull requests (GitHub: "Pull requests: read and write"; GitLab: the api
	// scope with the Developer role; Gitea: the write:repository scope with write access).
	Token string
	// HTTPClient sends the requests: the controller's own, with its address policy and timeout.
	// It is required; the Forge reads answers up to 1 MiB and follows redirects to the same host
	// only, on top of what the client does.
	HTTPClient *http.Client
}

// State is the state of a pull request.
type State string

const (
	// Open is a pull request that is neither merged nor closed (GitLab: opened, or locked while
	// it merges).
	Open State = "open"
	// Closed is a pull request closed without being merged.
	Closed State = "closed"
	// Merged is a merged pull request.
	Merged State = "merged"
)

// PullRequest is a pull request (a merge request on GitLab) as the forge describes it.
type PullRequest struct {
	// Number is the number users see: #n on Gitea and GitHub, !n (the IID) on GitLab.
	Number int64
	// URL is the pull request's web page.
	URL string
	// State is open, closed or merged.
	State State
	// Head is the branch proposed, Base the branch it would be merged into.
	Head, Base string
	// HeadSHA is the commit at the tip of Head as the forge last saw it.
	HeadSHA string
}

// Request is the pull request to open or update.
type Request struct {
	// Head is the branch to propose, a branch of the repository itself (not of a fork).
	Head string
	// Base is the branch it would be merged into.
	Base string
	// Title and Body are the pull request's title and description. Title is required.
	Title, Body string
	// Labels are added to a pull request Ensure opens, by name; an open one found keeps its
	// labels (a user may have changed them). GitHub and GitLab create the labels that do not
	// exist; Gitea adds only those that exist in the repository or its organization.
	Labels []string
}

// Forge opens, updates and reads the pull requests of one repository. Its methods may be called
// concurrently.
type Forge interface {
	// Ensure opens a pull request from Head into Base, or, when one from Head into Base is open
	// already, updates its title and body and returns it (created=false). Never opens a second
	// one. An open pull request whose title and body are those asked is returned untouched.
	//
	// When the pull request was opened but its labels could not be added, Ensure returns it with
	// created=true and a *LabelsError.
	Ensure(ctx context.Context, req Request) (pr PullRequest, created bool, err error)
	// Get returns the pull request numbered n, with its state (merged distinguished from closed).
	Get(ctx context.Context, n int64) (PullRequest, error)
}

// ErrInvalid is matched (errors.Is) by the errors about Options or a Request that no retry can
// fix: an unknown provider, a URL of the wrong shape, a missing token or branch.
var ErrInvalid = errors.New("invalid pull request options")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// LabelsError is returned by Ensure with a pull request it opened whose labels it could not add.
// The pull request exists: a next Ensure updates it (and does not add the labels).
type LabelsError struct {
	PullRequest PullRequest
	Err         error
}

func (e *LabelsError) Error() string {
	return fmt.Sprintf("pull request #%d was opened, but its labels were not added: %v", e.PullRequest.Number, e.Err)
}

func (e *LabelsError) Unwrap() error { return e.Err }

// New returns the Forge of a repository. Its errors match ErrInvalid: the options must change.
// It sends no request.
func New(opts Options) (Forge, error) {
	if opts.HTTPClient == nil {
		return nil, invalidf("pullrequest: Options.HTTPClient is required: pass the controller's client, which applies its address policy and timeouts")
	}
	repo, err := parseRepoURL(opts.RepoURL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.Token) == "" {
		return nil, invalidf("no token to open pull requests on %s with: a token that may open and update pull requests is needed", repo)
	}
	var api *apiURL
	if opts.APIURL != "" {
		if api, err = parseAPIURL(opts.APIURL); err != nil {
			return nil, err
		}
	}
	hc := boundedClient(opts.HTTPClient)
	switch opts.Provider {
	case Gitea:
		return newGitea(repo, api, opts.Token, hc)
	case GitHub:
		return newGitHub(repo, api, opts.Token, hc)
	case GitLab:
		return newGitLab(repo, api, opts.Token, hc)
	}
	return nil, invalidf("unknown forge provider %q: use %q, %q or %q", opts.Provider, Gitea, GitHub, GitLab)
}

// check validates a Request.
func (r Request) check() error {
	switch {
	case r.Head == "" || r.Base == "":
		return invalidf("a pull request needs a head branch and a base branch (head %q, base %q)", r.Head, r.Base)
	case r.Head == r.Base:
		return invalidf("the head branch and the base branch of a pull request are both %q: push to a branch of its own", r.Head)
	case strings.Contains(r.Head, ":") || strings.Contains(r.Base, ":"):
		// Git refuses ':' in branch names; GitHub would read "owner:branch" as a fork's branch.
		return invalidf("%q into %q: a branch name has no ':', and the head is a branch of the repository itself", r.Head, r.Base)
	case strings.TrimSpace(r.Title) == "":
		return invalidf("the pull request from %q into %q needs a title", r.Head, r.Base)
	}
	return nil
}
