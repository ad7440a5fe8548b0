package patch

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// FuzzUpdate records a fuzzed image or policy change of the generated Deployment in a fuzzed
// patch file. When Update succeeds, every document of the old file but the Deployment's entry
// is kept byte for byte, an unchanged result is the old file itself, and applying the new file
// gives the Deployment the change while every other object comes out as the old file made it.
func FuzzUpdate(f *testing.F) {
	for _, s := range []struct {
		patchFile, container, value string
		policy                      bool
	}{
		{"", "app", "app:1.1", false},
		{imageEntry, "app", "app:1.2", false},
		{imageEntry, "app", "app:1.0", false},
		{"# nothing yet\n", "sidecar", "proxy:2.0", false},
		{"apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: default\n  labels:\n    patched: \"yes\"\n---\n# a comment\n", "sidecar", "proxy:2.1", false},
		{"", "automated", "true", true},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\n  annotations:\n    fluxcd.io/automated: \"true\"\n", "automated", "", true},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\n  annotations:\n    flux.weave.works/tag.app: glob:1.*\n", "tag.app", "semver:~1.2", true},
		{"", "web", "x", false},
		{"kind: [\n", "app", "x", false},
		{"", "filter.fluxcd.io/app", "1", true},
	} {
		f.Add([]byte(s.patchFile), s.container, s.value, s.policy)
	}
	generated := objects(f, generatedYAML)
	app := workload.Ref{Namespace: "default", Kind: "Deployment", Name: "app"}
	f.Fuzz(func(t *testing.T, patchFile []byte, name, value string, policy bool) {
		if len(patchFile)+len(name)+len(value) > 4096 {
			return
		}
		// The change comes from a ManifestUpdate, through the API server, in UTF-8.
		if !utf8.ValidString(name) || !utf8.ValidString(value) {
			return
		}
		change := func(u *unstructured.Unstructured) (bool, error) { return workload.SetImage(u, name, value) }
		if policy {
			change = func(u *unstructured.Unstructured) (bool, error) { return workload.SetPolicy(u, name, &value), nil }
		}
		out, changed, err := Update(generated, patchFile, app, change, nil)
		if err != nil {
			return
		}
		if !changed && !bytes.Equal(out, patchFile) {
			t.Fatalf("unchanged, but the file is now %q", out)
		}
		docs, err := parseFile(patchFile)
		if err != nil {
			t.Fatalf("Update accepts a patch file parseFile refuses: %v", err)
		}
		deployment := IDOf(generated[0]).key()
		for _, d := range docs {
			// parseFile ends the text of the last document with a newline the file may lack.
			text := bytes.TrimSuffix(d.text, []byte("\n"))
			if !(d.isEntry() && d.id.key() == deployment) && !bytes.Contains(out, text) {
				t.Fatalf("document %d was not kept: %q", d.index, d.text)
			}
		}
		before, _, err := Apply(generated, patchFile, nil)
		if err != nil {
			t.Fatalf("the old patch file does not apply: %v", err)
		}
		after, _, err := Apply(generated, out, nil)
		if err != nil {
			t.Fatalf("the new patch file does not apply: %v", err)
		}
		for i := range generated[1:] {
			if !reflect.DeepEqual(after[i+1], before[i+1]) {
				t.Fatalf("%s changed", IDOf(generated[i+1]))
			}
		}
		d := after[0]
		if !policy {
			if got := workload.Images(d)[name]; got != value {
				t.Fatalf("the image of %q is %q, want %q", name, got, value)
			}
			return
		}
		known, ok := policyName(name)
		if !ok {
			return // an annotation of its own, which Policies does not list
		}
		got, set := workload.Policies(d)[known]
		if value != "" && got != value || value == "" && set {
			t.Fatalf("policy %q is %q (set: %t), want %q", name, got, set, value)
		}
	})
}

// policyName is the key of a policy in workload.Policies, false for an annotation key of
// another prefix.
func policyName(policy string) (string, bool) {
	for _, prefix := range []string{workload.PolicyPrefix, workload.LegacyPolicyPrefix} {
		if name, ok := strings.CutPrefix(policy, prefix); ok {
			return name, true
		}
	}
	if c, ok := strings.CutPrefix(policy, workload.FilterPolicyPrefix); ok {
		return workload.TagPolicy(c), true
	}
	return policy, !strings.Contains(policy, "/")
}
