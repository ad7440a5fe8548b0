package routing

import (
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRepositoryKey(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/team/app.git", "github.com/team/app"},
		{"https://github.com/team/app", "github.com/team/app"},
		{"https://github.com/team/app/", "github.com/team/app"},
		{"https://GitHub.COM/Team/App.GIT", "github.com/team/app"},
		{"https://x-access-token:s3cr3t@github.com/team/app.git", "github.com/team/app"},
		{"http://git.example.com:3000/team/app.git", "git.example.com/team/app"},
		{"ssh://git@git.example.com:2222/team/app.git", "git.example.com/team/app"},
		{"ssh://git@github.com/team/app", "github.com/team/app"},
		{"git@github.com:team/app.git", "github.com/team/app"},
		{"github.com:team/app", "github.com/team/app"},
		{"git://github.com/team/app.git", "github.com/team/app"},
		{"https://gitlab.example.com/group/sub/project.git", "gitlab.example.com/group/sub/project"},
		{"https://github.com./team/app", "github.com/team/app"},
		{"  https://github.com/team/app.git  ", "github.com/team/app"},
		{"/var/repos/app.git", ""},
		{"file:///var/repos/app.git", ""},
		{"", ""},
		{"://", ""},
	} {
		if got := RepositoryKey(tc.url); got != tc.want {
			t.Errorf("RepositoryKey(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func gitRepository(url string, ref map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"url": url}
	if ref != nil {
		spec["ref"] = ref
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
}

// A GitRepository is asked when its URL is the pushed repository's and its reference is among
// the pushed ones, as the source-controller resolves spec.ref (the first of commit, name,
// semver, tag and branch that is set).
func TestFollows(t *testing.T) {
	const url = "https://git.example.com/team/app.git"
	push := func(defaultBranch string, refs ...string) *Push {
		return &Push{URLs: []string{url, "git@git.example.com:team/app.git"}, Refs: refs, DefaultBranch: defaultBranch}
	}
	for _, tc := range []struct {
		name string
		url  string
		ref  map[string]any
		push *Push
		want bool
	}{
		{"branch pushed", url, map[string]any{"branch": "main"}, push("", "refs/heads/main"), true},
		{"other branch pushed", url, map[string]any{"branch": "main"}, push("", "refs/heads/dev"), false},
		{"ssh url of the repository", "ssh://git@git.example.com/team/app", map[string]any{"branch": "main"}, push("", "refs/heads/main"), true},
		{"another repository", "https://git.example.com/team/other.git", map[string]any{"branch": "main"}, push("", "refs/heads/main"), false},
		{"a prefix of the path is another repository", "https://git.example.com/team/ap", nil, push("", "refs/heads/master"), false},
		{"another host", "https://mirror.example.com/team/app.git", map[string]any{"branch": "main"}, push("", "refs/heads/main"), false},
		{"no url", "", nil, push("", "refs/heads/master"), false},
		{"tag pushed", url, map[string]any{"tag": "v1.0.0"}, push("", "refs/tags/v1.0.0"), true},
		{"other tag", url, map[string]any{"tag": "v1.0.0"}, push("", "refs/tags/v1.0.1"), false},
		{"branch named like the tag", url, map[string]any{"tag": "v1.0.0"}, push("", "refs/heads/v1.0.0"), false},
		{"semver: any tag", url, map[string]any{"semver": ">=1.0.0"}, push("", "refs/tags/v0.1.0"), true},
		{"semver: a branch", url, map[string]any{"semver": ">=1.0.0"}, push("", "refs/heads/main"), false},
		{"semver wins over branch", url, map[string]any{"semver": "*", "branch": "main"}, push("", "refs/heads/main"), false},
		{"name, full", url, map[string]any{"name": "refs/pull/420/head"}, push("", "refs/pull/420/head"), true},
		{"name, other", url, map[string]any{"name": "refs/pull/420/head"}, push("", "refs/heads/main"), false},
		{"name, short for a branch", url, map[string]any{"name": "main"}, push("", "refs/heads/main"), true},
		{"name wins over tag", url, map[string]any{"name": "refs/heads/main", "tag": "v1"}, push("", "refs/tags/v1"), false},
		{"commit is pinned", url, map[string]any{"commit": "0123abc", "branch": "main"}, push("", "refs/heads/main"), false},
		{"no ref: master", url, nil, push("", "refs/heads/master"), true},
		{"no ref: main", url, nil, push("", "refs/heads/main"), true},
		{"no ref: the payload's default branch", url, map[string]any{}, push("trunk", "refs/heads/trunk"), true},
		{"no ref: another branch", url, nil, push("trunk", "refs/heads/dev"), false},
		{"no ref: a tag", url, nil, push("", "refs/tags/master"), false},
		{"one of several refs", url, map[string]any{"branch": "release"}, push("", "refs/heads/main", "refs/heads/release"), true},
	} {
		if got := Follows(gitRepository(tc.url, tc.ref), tc.push); got != tc.want {
			t.Errorf("%s: Follows = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// ParsePush reads the repository and the references of each forge's push payload, and nothing
// from a payload that is not a push.
func TestParsePush(t *testing.T) {
	for _, tc := range []struct {
		name, body    string
		form          bool
		urls, refs    []string
		defaultBranch string
		ok            bool
	}{
		{name: "GitHub", body: `{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/o/r.git","ssh_url":"git@github.com:o/r.git",
			"html_url":"https://github.com/o/r","git_url":"git://github.com/o/r.git","default_branch":"main","master_branch":"main"}}`,
			urls: []string{"https://github.com/o/r.git", "git@github.com:o/r.git", "https://github.com/o/r", "git://github.com/o/r.git"},
			refs: []string{"refs/heads/main"}, defaultBranch: "main", ok: true},
		{name: "GitHub, as a form", form: true, body: `payload=%7B%22ref%22%3A%22refs%2Ftags%2Fv1%22%2C%22repository%22%3A%7B%22clone_url%22%3A%22https%3A%2F%2Fgithub.com%2Fo%2Fr.git%22%7D%7D`,
			urls: []string{"https://github.com/o/r.git"}, refs: []string{"refs/tags/v1"}, ok: true},
		{name: "GitLab", body: `{"object_kind":"push","ref":"refs/heads/dev","project":{"git_http_url":"https://gitlab.com/g/p.git",
			"git_ssh_url":"git@gitlab.com:g/p.git","web_url":"https://gitlab.com/g/p","default_branch":"main"},
			"repository":{"url":"git@gitlab.com:g/p.git","homepage":"https://gitlab.com/g/p","git_http_url":"https://gitlab.com/g/p.git"}}`,
			urls: []string{"git@gitlab.com:g/p.git", "https://gitlab.com/g/p.git", "https://gitlab.com/g/p", "https://gitlab.com/g/p.git",
				"git@gitlab.com:g/p.git", "https://gitlab.com/g/p"},
			refs: []string{"refs/heads/dev"}, defaultBranch: "main", ok: true},
		{name: "Bitbucket Server", body: `{"eventKey":"repo:refs_changed","changes":[{"ref":{"id":"refs/heads/main","type":"BRANCH"}},
			{"refId":"refs/tags/v2"}],"repository":{"links":{"clone":[{"href":"ssh://git@bb.example.com:7999/p/r.git","name":"ssh"},
			{"href":"https://bb.example.com/scm/p/r.git","name":"http"}],"self":[{"href":"https://bb.example.com/projects/P/repos/r/browse"}]}}}`,
			urls: []string{"ssh://git@bb.example.com:7999/p/r.git", "https://bb.example.com/scm/p/r.git"},
			refs: []string{"refs/heads/main", "refs/tags/v2"}, ok: true},
		{name: "Bitbucket Cloud", body: `{"push":{"changes":[{"new":{"type":"branch","name":"main"}},{"new":{"type":"tag","name":"v3"}},{"new":null}]},
			"repository":{"full_name":"ws/r","links":{"html":{"href":"https://bitbucket.org/ws/r"}}}}`,
			urls: []string{"https://bitbucket.org/ws/r"}, refs: []string{"refs/heads/main", "refs/tags/v3"}, ok: true},
		{name: "no repository", body: `{"ref":"refs/heads/main"}`, refs: []string{"refs/heads/main"}},
		{name: "no ref", body: `{"repository":{"clone_url":"https://github.com/o/r.git"}}`, urls: []string{"https://github.com/o/r.git"}},
		{name: "a ref that is not one", body: `{"ref":"main","repository":{"clone_url":"https://github.com/o/r.git"}}`, urls: []string{"https://github.com/o/r.git"}},
		{name: "fields of other types", body: `{"ref":["refs/heads/main"],"repository":{"clone_url":3,"links":{"clone":"x"}},"changes":{"a":1}}`},
		{name: "not JSON", body: `ref=refs/heads/main`},
		{name: "an array", body: `[{"ref":"refs/heads/main"}]`},
	} {
		h := http.Header{"Content-Type": []string{"application/json"}}
		if tc.form {
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		doc := Payload(h, []byte(tc.body))
		p, ok := ParsePush(doc)
		if ok != tc.ok || !equal(p.URLs, tc.urls) || !equal(p.Refs, tc.refs) || p.DefaultBranch != tc.defaultBranch {
			t.Errorf("%s: ParsePush = %+v, %v; want urls %v, refs %v, default branch %q, %v",
				tc.name, p, ok, tc.urls, tc.refs, tc.defaultBranch, tc.ok)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Routable: the pushes of each forge, and anything sent to a generic type.
func TestRoutable(t *testing.T) {
	for _, tc := range []struct {
		typ, event string
		want       bool
	}{
		{"github", "push", true}, {"github", "PUSH", true}, {"github", "release", false}, {"github", "", false},
		{"gitea", "push", true}, {"gitea", "create", false},
		{"gitlab", "Push Hook", true}, {"gitlab", "Tag Push Hook", true}, {"gitlab", "Merge Request Hook", false},
		{"bitbucket", "repo:refs_changed", true}, {"bitbucket", "pr:opened", false},
		{"generic", "", true}, {"generic-hmac", "", true},
		{"harbor", "", false}, {"dockerhub", "", false},
	} {
		if got := Routable(tc.typ, tc.event); got != tc.want {
			t.Errorf("Routable(%q, %q) = %v, want %v", tc.typ, tc.event, got, tc.want)
		}
	}
}
