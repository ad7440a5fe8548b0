// Package apicompare holds the checks that an API the gating-controller serves is Flux's field for
// field: every JSON field, the JSON it writes, and the kubebuilder markers of each type and
// field. Only tests import it.
package apicompare

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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// Fields checks that every JSON field of theirs (Flux's type, named kind) is a field of ours,
// with the same name and the same omission when empty, and that ours has no other: an object
// with every field set, Flux's or ours, reads strictly into the other type and writes back the
// same JSON. theirs and ours are empty objects of the two types; fewer than minFields fields
// found in Flux's means the walk is broken.
func Fields(t *testing.T, kind string, theirs, ours any, minFields int) {
	t.Helper()
	fill(theirs)
	fill(ours)
	theirPaths, ourPaths := jsonPaths(t, kind, theirs), jsonPaths(t, kind, ours)
	if len(theirPaths) < minFields {
		t.Fatalf("only %d fields found in Flux's %s: the walk is broken", len(theirPaths), kind)
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
		t.Errorf("fields of Flux's %s that ours lacks:\n  %s", kind, strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("fields of our %s that Flux's lacks:\n  %s", kind, strings.Join(extra, "\n  "))
	}
}

// RoundTrip reads the JSON of from (filled) into to, refusing unknown fields, and checks that to
// writes the same JSON.
func RoundTrip(t *testing.T, from, to any) {
	t.Helper()
	fill(from)
	roundTrip(t, from, to)
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
func jsonPaths(t *testing.T, root string, obj any) map[string]bool {
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
	walk(doc, root)
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

// Markers checks that the kubebuilder markers (validation, defaults, list types, print columns,
// CEL rules) of the types of Flux's package fluxAPI are those of ours (the package in the
// directory ours), type by type and field by field: the schemas agree. An Enum of ours may accept
// more values than Flux's, those of extraEnum ("Type.Field": values), never fewer.
func Markers(t *testing.T, fluxAPI, ours string, extraEnum map[string][]string) {
	t.Helper()
	pkg, err := build.Import(fluxAPI, ".", build.FindOnly)
	if err != nil {
		t.Fatalf("finding the source of %s: %v", fluxAPI, err)
	}
	theirs := parseMarkers(t, pkg.Dir)
	ourMarkers := parseMarkers(t, ours)
	if len(theirs) < 10 {
		t.Fatalf("only %d marked types and fields found in Flux's API: the parse is broken", len(theirs))
	}
	for where, want := range theirs {
		have := ourMarkers[where]
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
	for where, have := range ourMarkers {
		for _, m := range have {
			if !strings.HasPrefix(m, "+kubebuilder:validation:Enum=") && !slices.Contains(theirs[where], m) {
				t.Errorf("%s: our marker %s is not Flux's", where, m)
			}
		}
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
