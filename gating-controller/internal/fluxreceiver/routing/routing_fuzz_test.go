package routing

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzPushRouting feeds any body, as JSON or as a form, through what the receiver does with a
// delivery's body before it asks anything: Payload, ParsePush, RepositoryKey and Follows. None
// may panic; a push found has a URL and references under refs/ only, at most maxPushRefs of them.
func FuzzPushRouting(f *testing.F) {
	f.Add([]byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/o/r.git","default_branch":"main"}}`), false)
	f.Add([]byte(`{"changes":[{"ref":{"id":"refs/tags/v1"}}],"repository":{"links":{"clone":[{"href":"git@h:p/r.git"}]}}}`), false)
	f.Add([]byte(`{"push":{"changes":[{"new":{"type":"branch","name":"x"}}]},"repository":{"links":{"html":{"href":"https://bitbucket.org/w/r"}}}}`), false)
	f.Add([]byte(`payload=%7B%22ref%22%3A%22refs%2Fheads%2Fa%22%7D`), true)
	f.Add([]byte(`{"ref":"refs/heads/main","repository":{"clone_url":"[::1]:x/y"}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, form bool) {
		h := http.Header{"Content-Type": []string{"application/json"}}
		if form {
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		p, ok := ParsePush(Payload(h, body))
		if len(p.Refs) > maxPushRefs {
			t.Fatalf("%d refs read, more than %d", len(p.Refs), maxPushRefs)
		}
		for _, r := range p.Refs {
			if !strings.HasPrefix(r, "refs/") {
				t.Fatalf("ref %q is not under refs/", r)
			}
		}
		if ok != (len(p.URLs) > 0 && len(p.Refs) > 0) {
			t.Fatalf("ok %v with %d urls and %d refs", ok, len(p.URLs), len(p.Refs))
		}
		for _, u := range p.URLs {
			key := RepositoryKey(u)
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"url": u}}}
			if Follows(obj, p) && key == "" {
				t.Fatalf("a GitRepository of %q, which names no repository, follows the push", u)
			}
		}
	})
}
