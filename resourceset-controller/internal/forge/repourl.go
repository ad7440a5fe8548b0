package forge

import (
	"net/url"
	"strings"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// splitRepoURL parses "scheme://host[/prefix]/owner/repo[.git]" into the base address of the
// forge (with the prefix a forge served under a sub-path has) and the owner and repository.
func splitRepoURL(raw string) (base *url.URL, owner, repo string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", "", &inputs.InvalidURLError{URL: "(unparsable)", Reason: "it must be the http:// or https:// address of a repository"}
	}
	// The URL is quoted without a password it may carry.
	shown := u.Redacted()
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, "", "", &inputs.InvalidURLError{URL: shown, Reason: "it must not carry credentials, a query or a fragment: put the token in spec.secretRef"}
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return nil, "", "", &inputs.InvalidURLError{URL: shown, Reason: "it must end with /<owner>/<repository>"}
	}
	owner, repo = parts[len(parts)-2], strings.TrimSuffix(parts[len(parts)-1], ".git")
	base = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/" + strings.Join(parts[:len(parts)-2], "/")}
	base.Path = strings.TrimSuffix(base.Path, "/")
	return base, owner, repo, nil
}
