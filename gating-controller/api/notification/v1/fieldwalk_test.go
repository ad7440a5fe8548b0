package v1

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	fluxv1 "github.com/fluxcd/notification-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// fluxAPI is the import path of Flux's own Receiver type, a test dependency of this module at the
// release of Flux's kustomize-controller pinned in e2e/tools/versions.mk (KUSTOMIZE_CONTROLLER_VERSION
// v1.9.6: notification-controller/api v1.9.4, the same Flux release).
const fluxAPI = "github.com/fluxcd/notification-controller/api/v1"

// Every JSON field of Flux's Receiver is a field of ours, with the same name and the same
// omission when empty, and ours has no other: a Receiver with every field set, Flux's or ours,
// reads strictly into the other type and writes back the same JSON.
func TestFieldsOfFluxReceiver(t *testing.T) {
	theirs, ours := &fluxv1.Receiver{}, &Receiver{}
	fill(theirs)
	fill(ours)
	theirPaths, ourPaths := jsonPaths(t, theirs), jsonPaths(t, ours)
	if len(theirPaths) < 25 {
		t.Fatalf("only %d fields found in Flux's Receiver: the walk is broken", len(theirPaths))
	}
	var missing, extra []string
	for p := range theirPaths {
		if !ourPaths[p] {
			missing = append(missing, p)
		}
	}
	for p := range ourPaths {
		if !theirPaths[p] {
			extra = append(extra, p)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("fields of Flux's Receiver that ours lacks:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("fields of our Receiver that Flux's lacks:\n  %s", strings.Join(extra, "\n  "))
	}
	roundTrip(t, theirs, &Receiver{})
	roundTrip(t, ours, &fluxv1.Receiver{})
}

// fill sets every field of obj, so that none is left out of its JSON: strings, bools and numbers
// are never empty, and each list and map has one element.
func fill(obj any) {
	randfill.NewWithSeed(1).NilChance(0).NumElements(1, 1).Funcs(
		func(s *string, _ randfill.Continue) { *s = "x" },
		func(b *bool, _ randfill.Continue) { *b = true },
		func(m *map[string]string, _ randfill.Continue) { *m = map[string]string{"key": "value"} },
		func(m *metav1.ObjectMeta, _ randfill.Continue) { *m = metav1.ObjectMeta{} },
		func(m *metav1.TypeMeta, _ randfill.Continue) { *m = metav1.TypeMeta{} },
	).Fill(obj)
}

// jsonPaths is the path of every value in obj's JSON, lists taken as their elements.
func jsonPaths(t *testing.T, obj any) map[string]bool {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				out[path+"."+k] = true
				walk(child, path+"."+k)
			}
		case []any:
			for _, child := range v {
				walk(child, path)
			}
		}
	}
	walk(doc, "Receiver")
	return out
}

// roundTrip reads the JSON of from into to, refusing unknown fields, and checks that to writes
// the same JSON.
func roundTrip(t *testing.T, from, to any) {
	t.Helper()
	raw, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(to); err != nil {
		t.Fatalf("%T does not read the JSON of %T: %v", to, from, err)
	}
	back, err := json.Marshal(to)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, back) {
		t.Errorf("%T writes other JSON than %T:\n%s\n%s", to, from, raw, back)
	}
}

// The kubebuilder markers (validation, defaults, list types, print columns, CEL rules) of Flux's
// types are ours, type by type and field by field: the schemas agree. An Enum of ours may accept
// more values than Flux's (spec.type takes gitea; resources[].kind takes Sluice's kinds), never
// fewer.
func TestMarkersOfFluxReceiver(t *testing.T) {
	pkg, err := build.Import(fluxAPI, ".", build.FindOnly)
	if err != nil {
		t.Fatalf("finding the source of %s: %v", fluxAPI, err)
	}
	theirs := parseMarkers(t, pkg.Dir)
	ours := parseMarkers(t, ".")
	if len(theirs) < 10 {
		t.Fatalf("only %d marked types and fields found in Flux's API: the parse is broken", len(theirs))
	}
	// The values our enums add to Flux's.
	extraEnum := map[string][]string{
		"ReceiverSpec.Type":                  {"gitea"},
		"CrossNamespaceObjectReference.Kind": {"ManifestGeneration", "ResourceSet", "ResourceSetInputProvider"},
	}
	for where, want := range theirs {
		have := ours[where]
		for _, m := range want {
			if values, ok := strings.CutPrefix(m, "+kubebuilder:validation:Enum="); ok {
				ourValues := enumOf(have)
				if ourValues == nil {
					t.Errorf("%s: Flux's has %s, ours no Enum", where, m)
					continue
				}
				for _, v := range strings.Split(values, ";") {
					if !slices.Contains(ourValues, v) {
						t.Errorf("%s: Flux's enum accepts %q, ours does not", where, v)
					}
				}
				for _, v := range ourValues {
					if !strings.Contains(";"+values+";", ";"+v+";") && !slices.Contains(extraEnum[where], v) {
						t.Errorf("%s: ours accepts %q, which Flux's does not and which is not a known addition", where, v)
					}
				}
				continue
			}
			if !slices.Contains(have, m) {
				t.Errorf("%s: Flux's marker %s is not ours (ours: %v)", where, m, have)
			}
		}
	}
	for where, have := range ours {
		for _, m := range have {
			if !strings.HasPrefix(m, "+kubebuilder:validation:Enum=") && !slices.Contains(theirs[where], m) {
				t.Errorf("%s: our marker %s is not Flux's", where, m)
			}
		}
	}
}

// The webhook path is Flux's: /hook/ and the hex SHA-256 of token, name and namespace.
func TestWebhookPathIsFlux(t *testing.T) {
	for _, tc := range []struct{ token, name, namespace string }{
		{"s3cr3t", "github-receiver", "flux-system"},
		{"", "r", "default"},
		{"a token with spaces", "a.b-c", "team-1"},
	} {
		theirs := &fluxv1.Receiver{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: tc.namespace}}
		ours := &Receiver{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: tc.namespace}}
		if got, want := ours.GetWebhookPath(tc.token), theirs.GetWebhookPath(tc.token); got != want {
			t.Errorf("path of %+v: ours %s, Flux's %s", tc, got, want)
		}
	}
	// A known value, so that the formula is pinned even if both changed.
	r := &Receiver{ObjectMeta: metav1.ObjectMeta{Name: "github-receiver", Namespace: "flux-system"}}
	if got, want := r.GetWebhookPath("s3cr3t"), "/hook/"+sha256Hex("s3cr3tgithub-receiverflux-system"); got != want {
		t.Errorf("path: %s, want %s", got, want)
	}
}

// parseMarkers reads the markers of every type and struct field of the Go package in dir, keyed
// by "Type" and "Type.Field". A type's markers are those of the comments between the declaration
// before it and its own (controller-gen also reads a marker block separated by a blank line).
func parseMarkers(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(filepath.Base(f), "zz_generated") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		prevEnd := file.Name.End()
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				prevEnd = decl.End()
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				var before []*ast.CommentGroup
				for _, cg := range file.Comments {
					if cg.Pos() > prevEnd && cg.End() <= gen.Pos() {
						before = append(before, cg)
					}
				}
				add(out, ts.Name.Name, append(before, ts.Doc)...)
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, field := range st.Fields.List {
						for _, name := range field.Names {
							add(out, ts.Name.Name+"."+name.Name, field.Doc)
						}
					}
				}
			}
			prevEnd = gen.End()
		}
	}
	return out
}

// add records the schema markers of the comment groups under key.
func add(out map[string][]string, key string, groups ...*ast.CommentGroup) {
	for _, cg := range groups {
		if cg == nil {
			continue
		}
		for _, c := range cg.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			for _, prefix := range []string{"+kubebuilder:", "+required", "+optional", "+listType", "+listMapKey", "+groupName"} {
				if strings.HasPrefix(text, prefix) {
					out[key] = append(out[key], text)
					break
				}
			}
		}
	}
}

// enumOf is the values of the Enum marker among markers, nil without one.
func enumOf(markers []string) []string {
	for _, m := range markers {
		if v, ok := strings.CutPrefix(m, "+kubebuilder:validation:Enum="); ok {
			return strings.Split(v, ";")
		}
	}
	return nil
}
