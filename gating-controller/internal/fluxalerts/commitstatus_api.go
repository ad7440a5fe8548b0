package fluxalerts

import (
	"errors"
	"net/url"
	"strings"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
)

// statusAPI is where a forge takes a commit's status and lists its statuses, and how it is
// authenticated: its REST API, as Flux's notifiers call it through the forges' clients.
type statusAPI struct {
	// post creates a status; list lists the commit's statuses, newest first.
	post, list string
	headers    map[string]string
}

// commitStatusAPI is the API of the Provider's type for the repository at address and the
// commit sha. The address is the repository's URL as Flux takes it: https://<host>/<owner>/<repo>
// (GitLab: any depth of groups; Gitea: under a sub-path too), or its SSH form, which is read as
// https. Its errors do not quote the address, which may come from a Secret.
func commitStatusAPI(typ, address, sha string, token []byte) (statusAPI, error) {
	base, segments, err := repoAddress(address)
	if err != nil {
		return statusAPI{}, err
	}
	n := len(segments)
	esc := url.PathEscape
	switch typ {
	case notificationv1beta3.GiteaProvider:
		if n < 2 {
			return statusAPI{}, errors.New("the address of a gitea Provider is the repository's URL, http(s)://<host>/<owner>/<repository>")
		}
		base.Path = strings.Join(segments[:n-2], "/")
		statuses := base.String() + "/api/v1/repos/" + esc(segments[n-2]) + "/" + esc(segments[n-1]) + "/statuses/" + sha
		return statusAPI{post: statuses, list: statuses + "?sort=leastindex&limit=50",
			headers: map[string]string{"Authorization": "token " + string(token)}}, nil
	case notificationv1beta3.GitHubProvider:
		if n != 2 {
			return statusAPI{}, errors.New("the address of a github Provider is the repository's URL, https://github.com/<owner>/<repository>")
		}
		api := base.String() + "/api/v3"
		if h := strings.ToLower(base.Hostname()); h == "github.com" || h == "www.github.com" {
			api = "https://api.github.com"
		}
		repo := api + "/repos/" + esc(segments[0]) + "/" + esc(segments[1])
		return statusAPI{post: repo + "/statuses/" + sha, list: repo + "/commits/" + sha + "/statuses?per_page=50", headers: map[string]string{
			"Authorization": "Bearer " + string(token), "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}}, nil
	case notificationv1beta3.GitLabProvider:
		if n < 2 {
			return statusAPI{}, errors.New("the address of a gitlab Provider is the project's URL, https://<host>/<group>/<project>")
		}
		project := base.String() + "/api/v4/projects/" + esc(strings.Join(segments, "/"))
		return statusAPI{post: project + "/statuses/" + sha, list: project + "/repository/commits/" + sha + "/statuses?per_page=100",
			headers: map[string]string{"PRIVATE-TOKEN": string(token)}}, nil
	}
	return statusAPI{}, errors.New("the type sets no commit status")
}

// repoAddress splits a repository URL into the forge's base (scheme and host) and the path's
// segments, without ".git" or a trailing "/". ssh://[user@]host[:port]/path and the scp-like
// user@host:path are the same repository over https.
func repoAddress(raw string) (*url.URL, []string, error) {
	invalid := errors.New("the address is not a repository URL: http(s)://<host>/<path> or ssh://<host>/<path>")
	if !strings.Contains(raw, "://") {
		// user@host:path
		userHost, path, ok := strings.Cut(raw, ":")
		_, host, hasUser := strings.Cut(userHost, "@")
		if !ok || !hasUser || host == "" {
			return nil, nil, invalid
		}
		raw = "ssh://" + host + "/" + path
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, nil, invalid
	}
	switch u.Scheme {
	case "https", "http":
	case "ssh":
		u.Scheme, u.Host = "https", u.Hostname()
	default:
		return nil, nil, invalid
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, nil, errors.New("the address must not carry a query or a fragment")
	}
	path := strings.Trim(strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git"), "/")
	segments := strings.Split(path, "/")
	for _, s := range segments {
		if s == "" || s == "." || s == ".." {
			return nil, nil, invalid
		}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, segments, nil
}
