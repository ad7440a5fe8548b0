package workload

import (
	"bytes"
	"testing"
	"unicode/utf8"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// FuzzInFile edits the Deployment default/app in fuzzed YAML streams: no change at all, its
// image (scalar splicing), a policy annotation set or removed (a structural change, carried by
// the line merge of linemerge.go, or a re-encoding). When InFile succeeds, the other documents
// and separators keep their bytes, the edited document parses to exactly what the change made
// of it, no change gives the file back as it was, and doing the same change again changes
// nothing more.
func FuzzInFile(f *testing.F) {
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\n  labels: {app: app}\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: \"ghcr.io/acme/app:1.0\"    # {\"$imagepolicy\": \"app\"}\n      - name: proxy\n        image: envoy:1.30\n"
	for _, s := range []struct {
		data                   string
		mode                   uint8
		name, value, container string
	}{
		{stream, 1, "", "ghcr.io/acme/app:1.1", "app"},
		{stream, 2, PolicyAutomated, "true", ""},
		{stream, 3, PolicyAutomated, "", ""},
		{stream, 0, "", "", ""},
		{deployment, 2, TagPolicy("app"), "semver:~1", ""},
		{deployment, 1, "", "1.10", "proxy"},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n    name: app   # node agent\n    annotations:\n        team: infra\nspec:\n    template:\n        spec:\n            containers:\n                - name: app\n                  image: agent:1\n", 2, PolicyLocked, "true", ""},
		{"kind: Deployment\napiVersion: apps/v1\nmetadata:\n  name: app  # keep\n  annotations:\n    fluxcd.io/locked: 'true'\nspec: {}", 3, PolicyLocked, "", ""},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  annotations:\n    fluxcd.io/tag.app:   'glob:1.*'   # pinned\n", 2, TagPolicy("app"), "glob:2.*", ""},
		{"apiVersion: v1\nkind: Deployment\nmetadata:\n  name: app\n  labels: {on: yes}\n  annotations:\n    description: a long\n      plain text\nspec:\n  x: \"a\\u00e9\"\n  y: >-\n    folded\n    text\n\n\n  z: |\n    literal\n  w: 0o17\n  v: ~\n", 2, PolicyAutomated, "true", ""},
		{"# first\napiVersion: v1\nkind: ConfigMap\nmetadata:   {name: c}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app,\n  labels: {app: app}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:1 # pinned\n", 2, PolicyLocked, "true", ""},
		{"apiVersion: apps/v1\r\nkind: Deployment\r\nmetadata:\r\n  name: app\r\n", 2, PolicyAutomated, "true", ""},
		{"--- # the workload\n" + deployment + "--- \n...\n", 1, "", "x:\"y\"", "app"},
		{deployment + "---\n" + deployment, 1, "", "x", "app"},
	} {
		f.Add(s.data, s.mode, s.name, s.value, s.container)
	}
	ref := Ref{Namespace: "default", Kind: "Deployment", Name: "app"}
	f.Fuzz(func(t *testing.T, data string, mode uint8, name, value, container string) {
		if len(data) > 2048 || len(name)+len(value)+len(container) > 256 {
			return
		}
		// The change comes from a ManifestUpdate, through the API server, in UTF-8; the file
		// may hold anything.
		if !utf8.ValidString(name) || !utf8.ValidString(value) || !utf8.ValidString(container) {
			return
		}
		change := func(n *kyaml.RNode) error {
			var err error
			switch mode % 4 {
			case 1:
				_, err = SetImageNode(n, container, value)
			case 2:
				_, err = SetPolicyNode(n, name, &value)
			case 3:
				_, err = SetPolicyNode(n, name, nil)
			}
			return err
		}
		out, changed, err := InFile([]byte(data), ref, "default", change)
		if err != nil {
			return
		}
		if changed != (string(out) != data) {
			t.Fatalf("changed is %t for %q", changed, out)
		}
		if mode%4 == 0 && changed {
			t.Fatalf("no change, but the file became %q", out)
		}

		// The document InFile edited, found again; the bytes around it must not move.
		var match segment
		for _, seg := range splitDocuments([]byte(data)) {
			n, err := parseDocument([]byte(data[seg.start:seg.end]))
			if err == nil && n != nil && n.YNode().Kind == kyaml.MappingNode && ref.matches(n.GetKind(), n.GetNamespace(), n.GetName(), "default") {
				match = seg
			}
		}
		head, tail := data[:match.start], data[match.end:]
		if !bytes.HasPrefix(out, []byte(head)) || !bytes.HasSuffix(out, []byte(tail)) || len(out) < len(head)+len(tail) {
			t.Fatalf("the other documents moved: %q became %q", data, out)
		}
		edited := out[len(head) : len(out)-len(tail)]

		want, err := parseDocument([]byte(data[match.start:match.end]))
		if err != nil || want == nil {
			t.Fatalf("the edited document does not parse again: %v", err)
		}
		if err := change(want); err != nil {
			t.Fatalf("the change fails the second time: %v", err)
		}
		got, err := parseDocument(edited)
		if err != nil || got == nil {
			t.Fatalf("the edited document %q does not parse: %v", edited, err)
		}
		if w, g := kyamlString(t, want), kyamlString(t, got); w != g {
			t.Fatalf("the edited document parses to\n%s\nwant\n%s", g, w)
		}

		again, changedAgain, err := InFile(out, ref, "default", change)
		if err != nil || changedAgain || !bytes.Equal(again, out) {
			t.Fatalf("the same change again gives %q (changed: %t, err: %v), was %q", again, changedAgain, err, out)
		}
	})
}

func kyamlString(t *testing.T, n *kyaml.RNode) string {
	t.Helper()
	s, err := kyaml.String(n.Document())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
