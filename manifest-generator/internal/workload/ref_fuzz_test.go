package workload

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzParseRef parses fuzzed workload references. An accepted reference has a kind and a
// name, its String form parses back to it (kind in lower case), and it matches the object it
// names.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"default:deployment/foo", "apps:Deployment/foo", "<cluster>:namespace/apps", ":helmrelease/podinfo",
		"default:deployment/foo.bar-1", "deployment/foo", "default:deployment", "default:/foo", "default:deployment/",
		"default:deployment/foo/bar", "a/b:deployment/foo", "a:b:c/d", "ns:kind/na:me", "<cluster>:ns/<x>", " : / ",
		"İ:İ/İ", "default:deployment/foo\n", "<cluster",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if r.Kind == "" || r.Name == "" {
			t.Fatalf("%q parsed to %+v", s, r)
		}
		again, err := ParseRef(r.String())
		if err != nil {
			t.Fatalf("%q is written %q, which does not parse: %v", s, r.String(), err)
		}
		if want := (Ref{Namespace: r.Namespace, Kind: strings.ToLower(r.Kind), Name: r.Name}); again != want {
			t.Fatalf("%q is written %q, which parses to %+v, want %+v", s, r.String(), again, want)
		}
		u := &unstructured.Unstructured{}
		u.SetKind(r.Kind)
		u.SetName(r.Name)
		u.SetNamespace(r.Namespace)
		if !r.Matches(u, "default") {
			t.Fatalf("%+v does not match the object it names", r)
		}
	})
}
