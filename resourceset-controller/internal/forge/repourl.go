package forge

import (
	"net/url"
	"strings"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// repoURL is the address of a repository as the forge types take it: http:// or https://, no
// credentials, query or fragment (the token belongs in spec.secretRef), its path without a
// trailing "/" or ".git", in segments.
type repoURL struct {
	*url.URL
	// display is the URL for messages, without a password it may carry.
	display  string
	segments []string
}

// parseRepoURL parses raw; form is the address's shape for messages,
// e.g. "https://<host>/<owner>/<repo>".
func parseRepoURL(raw, form string) (repoURL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return repoURL{}, &inputs.InvalidURLError{URL: "(unparsable)", Reason: "it does not parse as a URL"}
	}
	r := repoURL{URL: u, display: u.Redacted()}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return r, r.invalid("the address of a repository is " + form)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return r, r.invalid("it must not carry credentials, a query or a fragment: put the token in spec.secretRef")
	}
	path := strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git"), "/")
	r.segments = strings.Split(path, "/")
	return r, nil
}

func (r repoURL) invalid(reason string) error {
	return &inputs.InvalidURLError{URL: r.display, Reason: reason}
}

// splitRepoURL parses "scheme://host[/prefix]/owner/repo[.git]" into the base address of the
// forge (with the prefix a forge served under a sub-path has) and the owner and repository.
func splitRepoURL(raw string) (base *url.URL, owner, repo string, err error) {
	r, err := parseRepoURL(raw, "http(s)://<host>/<owner>/<repository>")
	if err != nil {
		return nil, "", "", err
	}
	n := len(r.segments)
	if n < 2 || r.segments[n-2] == "" || r.segments[n-1] == "" {
		return nil, "", "", r.invalid("it must end with /<owner>/<repository>")
	}
	base = &url.URL{Scheme: r.Scheme, Host: r.Host, Path: strings.TrimSuffix("/"+strings.Join(r.segments[:n-2], "/"), "/")}
	return base, r.segments[n-2], r.segments[n-1], nil
}
