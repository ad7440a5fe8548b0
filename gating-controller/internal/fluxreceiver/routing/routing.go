package routing

import (
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RepositoryKey is a repository URL reduced to what names the repository: the host, lower-case,
// without user information or port, and the path, lower-case, without a leading or trailing
// slash or a trailing .git. The scheme is dropped, so the HTTPS, SSH (`ssh://git@host/path`),
// scp-like (`git@host:path`) and git:// URLs of a repository are one key. "" when the URL has no
// host.
func RepositoryKey(raw string) string {
	raw = strings.TrimSpace(raw)
	var host, path string
	if i := strings.Index(raw, "://"); i < 0 && strings.Contains(raw, ":") {
		// scp-like: [user@]host:path
		hostPart, p, _ := strings.Cut(raw, ":")
		if at := strings.LastIndex(hostPart, "@"); at >= 0 {
			hostPart = hostPart[at+1:]
		}
		host, path = hostPart, p
	} else {
		u, err := url.Parse(raw)
		if err != nil {
			return ""
		}
		host, path = u.Hostname(), u.Path
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	path = strings.ToLower(strings.Trim(path, "/"))
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	if host == "" || strings.ContainsAny(host, "/ ") {
		return ""
	}
	return host + "/" + path
}

// Follows tells whether the GitRepository obj fetches the pushed repository, at a reference the
// push changed (routing, docs/flux-receiver.md):
//   - its spec.url and one URL of the push have the same RepositoryKey;
//   - its spec.ref, the first set of commit, name, semver, tag and branch as the source-controller
//     reads it: commit never (a pinned commit does not move); name equal to a pushed reference
//     (a name without refs/ as a branch or a tag); semver any pushed tag; tag refs/tags/<tag>;
//     branch refs/heads/<branch>; no reference (the source-controller's default, master) a push
//     to master, main or the default branch the payload names.
func Follows(obj *unstructured.Unstructured, p *Push) bool {
	spec, _ := obj.Object["spec"].(map[string]any)
	key := RepositoryKey(str(spec, "url"))
	if key == "" || !slices.ContainsFunc(p.URLs, func(u string) bool { return RepositoryKey(u) == key }) {
		return false
	}
	pushed := func(refs ...string) bool {
		return slices.ContainsFunc(refs, func(r string) bool { return slices.Contains(p.Refs, r) })
	}
	switch {
	case str(spec, "ref", "commit") != "":
		return false
	case str(spec, "ref", "name") != "":
		name := str(spec, "ref", "name")
		if strings.HasPrefix(name, "refs/") {
			return pushed(name)
		}
		return pushed("refs/heads/"+name, "refs/tags/"+name)
	case str(spec, "ref", "semver") != "":
		return slices.ContainsFunc(p.Refs, func(r string) bool { return strings.HasPrefix(r, "refs/tags/") })
	case str(spec, "ref", "tag") != "":
		return pushed("refs/tags/" + str(spec, "ref", "tag"))
	case str(spec, "ref", "branch") != "":
		return pushed("refs/heads/" + str(spec, "ref", "branch"))
	default:
		defaults := []string{"refs/heads/master", "refs/heads/main"}
		if p.DefaultBranch != "" {
			defaults = append(defaults, "refs/heads/"+p.DefaultBranch)
		}
		return pushed(defaults...)
	}
}
