// Package routing reads push deliveries and tells which GitRepositories a push concerns: the
// part of the Receiver that parses what callers send, kept apart so that it is table-tested and
// fuzzed without a control plane (docs/flux-receiver.md, Routing).
package routing

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// Push is what a push delivery says: the repository, by the URLs its payload gives, the
// references it changed, and the repository's default branch when the payload names it.
type Push struct {
	URLs          []string
	Refs          []string
	DefaultBranch string
}

// maxPushRefs bounds the references read from one payload (Bitbucket lists one per change).
const maxPushRefs = 100

// pushEvents are the events of each type that announce a push. generic and generic-hmac carry no
// event: their body is read as a push when it has the shape of one.
var pushEvents = map[string][]string{
	notificationv1.GitHubReceiver:    {"push"},
	notificationv1.GiteaReceiver:     {"push"},
	notificationv1.GitLabReceiver:    {"Push Hook", "Tag Push Hook"},
	notificationv1.BitbucketReceiver: {"repo:refs_changed"},
}

// Routable tells whether a delivery of this type and event may be routed: a push of a forge, or
// any delivery of a generic type.
func Routable(typ, event string) bool {
	switch typ {
	case notificationv1.GenericReceiver, notificationv1.GenericHMACReceiver:
		return true
	}
	for _, e := range pushEvents[typ] {
		if strings.EqualFold(e, event) {
			return true
		}
	}
	return false
}

// ParsePush reads the push in a payload of GitHub, Gitea, GitLab, Bitbucket Server or Bitbucket
// Cloud shape. ok is false unless it finds both a repository URL and a reference under refs/:
// a payload it does not understand is not routed.
func ParsePush(doc map[string]any) (p *Push, ok bool) {
	p = &Push{}
	addRef := func(ref string) {
		if strings.HasPrefix(ref, "refs/") && len(p.Refs) < maxPushRefs {
			p.Refs = append(p.Refs, ref)
		}
	}
	// GitHub, Gitea and GitLab: `ref`, and the URLs of `repository` or (GitLab) `project`.
	addRef(str(doc, "ref"))
	for _, path := range [][]string{
		{"repository", "clone_url"}, {"repository", "ssh_url"}, {"repository", "html_url"}, {"repository", "git_url"},
		{"repository", "url"}, {"repository", "git_http_url"}, {"repository", "git_ssh_url"}, {"repository", "homepage"},
		{"project", "git_http_url"}, {"project", "git_ssh_url"}, {"project", "web_url"}, {"project", "http_url"}, {"project", "ssh_url"},
		// Bitbucket Cloud: the repository's page, which is also its clone URL without .git.
		{"repository", "links", "html", "href"},
	} {
		if u := str(doc, path...); u != "" {
			p.URLs = append(p.URLs, u)
		}
	}
	for _, path := range [][]string{{"repository", "default_branch"}, {"project", "default_branch"}, {"repository", "master_branch"}} {
		if b := str(doc, path...); b != "" {
			p.DefaultBranch = b
			break
		}
	}
	// Bitbucket Server: changes[].ref.id (or refId), and the repository's clone links.
	for _, change := range list(doc, "changes") {
		c, _ := change.(map[string]any)
		if id := str(c, "ref", "id"); id != "" {
			addRef(id)
		} else {
			addRef(str(c, "refId"))
		}
	}
	for _, link := range list(doc, "repository", "links", "clone") {
		l, _ := link.(map[string]any)
		if u := str(l, "href"); u != "" {
			p.URLs = append(p.URLs, u)
		}
	}
	// Bitbucket Cloud: push.changes[].new is the branch or tag after the push.
	for _, change := range list(doc, "push", "changes") {
		c, _ := change.(map[string]any)
		name := str(c, "new", "name")
		switch str(c, "new", "type") {
		case "branch":
			addRef("refs/heads/" + name)
		case "tag", "annotated_tag":
			addRef("refs/tags/" + name)
		}
	}
	return p, len(p.URLs) > 0 && len(p.Refs) > 0
}

// Payload is a request's body as a JSON object, for the routing and the filters: the body, or
// the `payload` field of a form (GitHub and Gitea send either); nil when it is neither.
func Payload(h http.Header, body []byte) map[string]any {
	raw := body
	if ct, _, _ := mime.ParseMediaType(h.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Has("payload") {
			raw = []byte(form.Get("payload"))
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil
	}
	return doc
}

// str is the string at path in a decoded JSON document, "" when absent or not a string.
func str(doc map[string]any, path ...string) string {
	v, _ := at(doc, path).(string)
	return v
}

// list is the array at path in a decoded JSON document, nil when absent or not an array.
func list(doc map[string]any, path ...string) []any {
	v, _ := at(doc, path).([]any)
	return v
}

func at(doc map[string]any, path []string) any {
	var cur any = doc
	for _, key := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[key]
	}
	return cur
}
