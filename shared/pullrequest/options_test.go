package pullrequest_test

import (
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/pullrequest"
)

// Options that no retry can fix are refused by New, before any request, with a message that
// says what to change and repeats no credentials.
func TestNewRefusesInvalidOptions(t *testing.T) {
	valid := pullrequest.Options{Provider: pullrequest.Gitea, RepoURL: "https://gitea.example.com/team/app", Token: "t0ken", HTTPClient: &http.Client{}}
	for _, tc := range []struct {
		name string
		edit func(*pullrequest.Options)
		want string
	}{
		{name: "no client", edit: func(o *pullrequest.Options) { o.HTTPClient = nil }, want: "Options.HTTPClient is required"},
		{name: "no token", edit: func(o *pullrequest.Options) { o.Token = " " }, want: "no token to open pull requests on https://gitea.example.com/team/app"},
		{name: "unknown provider", edit: func(o *pullrequest.Options) { o.Provider = "bitbucket" }, want: `unknown forge provider "bitbucket": use "gitea", "github" or "gitlab"`},
		{name: "no URL", edit: func(o *pullrequest.Options) { o.RepoURL = "" }, want: "no repository URL"},
		{name: "no repository", edit: func(o *pullrequest.Options) { o.RepoURL = "https://gitea.example.com/team" }, want: "does not end with /<owner>/<repository>"},
		{name: "a web page", edit: func(o *pullrequest.Options) { o.RepoURL = "https://gitea.example.com/team//app" }, want: "nothing after the repository"},
		{name: "GitLab's pages", edit: func(o *pullrequest.Options) {
			o.Provider, o.RepoURL = pullrequest.GitLab, "https://gitlab.com/group/app/-/merge_requests"
		}, want: "nothing after the repository"},
		{name: "a query", edit: func(o *pullrequest.Options) { o.RepoURL = "https://gitea.example.com/team/app?tab=1" }, want: "no query nor fragment"},
		{name: "another scheme", edit: func(o *pullrequest.Options) { o.RepoURL = "ftp://gitea.example.com/team/app" }, want: `the scheme "ftp"`},
		{name: "no host", edit: func(o *pullrequest.Options) { o.RepoURL = "https:///team/app" }, want: "has no host"},
		{name: "credentials", edit: func(o *pullrequest.Options) { o.RepoURL = "https://bot:s3cr3t-pw@gitea.example.com/team/app" }, want: "carries credentials"},
		{name: "credentials, scp-like", edit: func(o *pullrequest.Options) { o.RepoURL = "bot:s3cr3t-pw@gitea.example.com:team/app" }, want: "is not of the form"},
		{name: "API URL with credentials", edit: func(o *pullrequest.Options) { o.APIURL = "https://bot:s3cr3t-pw@gitea.example.com/api/v1" }, want: "must not carry credentials"},
		{name: "API URL of another scheme", edit: func(o *pullrequest.Options) { o.APIURL = "gitea.example.com/api/v1" }, want: "is not of the form http(s)://<host>[/<path>]"},
		{name: "GitLab prefix leaves no project", edit: func(o *pullrequest.Options) {
			o.Provider, o.RepoURL, o.APIURL = pullrequest.GitLab, "https://example.com/gitlab/app", "https://example.com/gitlab"
		}, want: "the path of a GitLab project URL is /<group>/<project>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			opts := valid
			tc.edit(&opts)
			_, err := pullrequest.New(opts)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(errors.Is(err, pullrequest.ErrInvalid)).To(BeTrue())
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t-pw"))
			g.Expect(err.Error()).NotTo(ContainSubstring("t0ken"))
		})
	}
}
