package pullrequest

import (
	"net/url"
	"strings"
)

// repoURL is a repository's address as the forge's web server has it.
type repoURL struct {
	// scheme is http or https; host the host with its port, if any.
	scheme, host string
	// segments is the path without a trailing "/" or ".git": [prefix...] owner... repo.
	segments []string
}

// String is the repository's web address, for messages: it holds no credentials.
func (r repoURL) String() string {
	return r.scheme + "://" + r.host + "/" + strings.Join(r.segments, "/")
}

// base is scheme://host followed by the first n segments.
func (r repoURL) base(n int) *url.URL {
	return &url.URL{Scheme: r.scheme, Host: r.host, Path: strings.TrimSuffix("/"+strings.Join(r.segments[:n], "/"), "/")}
}

// parseRepoURL parses a Git repository URL: http(s)://host[/prefix]/owner/repo[.git], or the SSH
// forms ssh://[user@]host[:port]/owner/repo[.git] and [user@]host:owner/repo[.git], which map to
// https://host/owner/repo (the SSH port is not the web server's).
func parseRepoURL(raw string) (repoURL, error) {
	const form = "http(s)://<host>/<owner>/<repository>, ssh://git@<host>/<owner>/<repository> or git@<host>:<owner>/<repository>"
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return repoURL{}, invalidf("no repository URL: give one of the form %s", form)
	}
	var r repoURL
	var path string
	if scheme, _, ok := strings.Cut(raw, "://"); !ok || strings.ContainsAny(scheme, "/@:") {
		// The scp-like form [user@]host:path.
		hostPart, p, ok := strings.Cut(raw, ":")
		if !ok || strings.Contains(hostPart, "/") {
			return repoURL{}, invalidf("%s is not a repository URL: give one of the form %s", redactedURL(raw), form)
		}
		if strings.Contains(p, "@") {
			// Not git's form, and perhaps a password: not repeated in the message.
			return repoURL{}, invalidf("the repository URL is not of the form %s", form)
		}
		if i := strings.LastIndex(hostPart, "@"); i >= 0 {
			hostPart = hostPart[i+1:]
		}
		r.scheme, r.host, path = "https", hostPart, p
	} else {
		u, err := url.Parse(raw)
		if err != nil {
			return repoURL{}, invalidf("%s does not parse as a URL: give one of the form %s", redactedURL(raw), form)
		}
		switch strings.ToLower(u.Scheme) {
		case "http", "https":
			if u.User != nil {
				return repoURL{}, invalidf("%s carries credentials: remove them, the token is given apart", u.Redacted())
			}
			r.scheme, r.host = strings.ToLower(u.Scheme), u.Host
		case "ssh":
			r.scheme, r.host = "https", u.Hostname()
			if strings.Contains(r.host, ":") {
				r.host = "[" + r.host + "]"
			}
		default:
			return repoURL{}, invalidf("%s: the scheme %q is not one of a forge's repository: give a URL of the form %s", u.Redacted(), u.Scheme, form)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return repoURL{}, invalidf("%s: a repository URL has no query nor fragment", u.Redacted())
		}
		path = u.Path
	}
	if r.host == "" {
		return repoURL{}, invalidf("%s has no host: give a URL of the form %s", redactedURL(raw), form)
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	r.segments = strings.Split(path, "/")
	if len(r.segments) < 2 {
		return repoURL{}, invalidf("%s does not end with /<owner>/<repository>", r)
	}
	for _, s := range r.segments {
		if s == "" || s == "." || s == ".." || s == "-" {
			return repoURL{}, invalidf("%s: the path of a repository URL is [/<prefix>]/<owner>/<repository>, with nothing after the repository", r)
		}
	}
	return r, nil
}

// apiURL is the address of a forge's API given in Options.APIURL.
type apiURL struct {
	*url.URL
}

func parseAPIURL(raw string) (*apiURL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, invalidf("the API URL %s does not parse as a URL", redactedURL(raw))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return nil, invalidf("the API URL %s is not of the form http(s)://<host>[/<path>]", u.Redacted())
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, invalidf("the API URL %s must not carry credentials, a query or a fragment", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &apiURL{u}, nil
}

// withPath is the API URL ending with apiPath (e.g. "/api/v1"), added when missing.
func (a *apiURL) withPath(apiPath string) *url.URL {
	u := *a.URL
	if !strings.HasSuffix(u.Path, apiPath) {
		u.Path += apiPath
	}
	return &u
}

// prefix is the API URL's path without apiPath: the sub-path the forge is served under.
func (a *apiURL) prefix(apiPath string) []string {
	p := strings.Trim(strings.TrimSuffix(a.Path, apiPath), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// redactedURL is raw for a message: without a password if it parses, else a placeholder.
func redactedURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(an unparsable URL)"
}
