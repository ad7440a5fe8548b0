package v1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// fluxOperatorAPI is where `make tools` puts the Go files of flux-operator's api/v1 package at the
// pinned version (FLUX_OPERATOR_VERSION in e2e/tools/versions.mk). The module needs Go 1.27, so it
// cannot be a dependency of this module: its source is read as text and walked with go/ast.
const fluxOperatorAPI = "bin/flux-operator-api/v1"

// Every JSON field of flux-operator's ResourceSet and ResourceSetInputProvider is a field of ours,
// and every provider type of its schema is accepted by ours.
func TestFieldsOfFluxOperator(t *testing.T) {
	theirs := parseFluxOperatorAPI(t)
	for _, tc := range []struct {
		root string
		ours any
	}{
		{"ResourceSet", ResourceSet{}},
		{"ResourceSetInputProvider", ResourceSetInputProvider{}},
	} {
		t.Run(tc.root, func(t *testing.T) {
			have := map[string]bool{}
			walkReflect(reflect.TypeOf(tc.ours), tc.root, have)
			want := map[string]bool{}
			theirs.walk(t, ast.NewIdent(tc.root), tc.root, want)
			if len(want) < 10 {
				t.Fatalf("only %d fields found in flux-operator's %s: the walk is broken", len(want), tc.root)
			}
			var missing []string
			for p := range want {
				if !have[p] {
					missing = append(missing, p)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("fields of flux-operator's %s that ours lacks:\n  %s", tc.root, strings.Join(missing, "\n  "))
			}
		})
	}
	t.Run("provider types", func(t *testing.T) {
		var missing []string
		for _, typ := range theirs.enum(t, "ResourceSetInputProviderSpec", "Type") {
			if !slices.Contains(providerTypes(t), typ) {
				missing = append(missing, typ)
			}
		}
		if len(missing) > 0 {
			t.Errorf("provider types of flux-operator's schema that ours refuses: %v", missing)
		}
	})
}

// providerTypes are the values our schema accepts for spec.type (the Enum marker of our type).
func providerTypes(t *testing.T) []string {
	t.Helper()
	ours := &goPackage{types: map[string]ast.Expr{}, docs: map[string]*ast.CommentGroup{}}
	ours.parseDir(t, ".")
	return ours.enum(t, "ResourceSetInputProviderSpec", "Type")
}

// goPackage is the type declarations of a package, read from its source.
type goPackage struct {
	types map[string]ast.Expr
	// docs are the doc comments of struct fields, by "Type.Field".
	docs map[string]*ast.CommentGroup
}

func parseFluxOperatorAPI(t *testing.T) *goPackage {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, fluxOperatorAPI)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("%s not found: run `make tools`", dir)
	}
	p := &goPackage{types: map[string]ast.Expr{}, docs: map[string]*ast.CommentGroup{}}
	p.parseDir(t, dir)
	return p
}

func (p *goPackage) parseDir(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			p.types[spec.Name.Name] = spec.Type
			if st, ok := spec.Type.(*ast.StructType); ok {
				for _, f := range st.Fields.List {
					for _, name := range f.Names {
						p.docs[spec.Name.Name+"."+name.Name] = f.Doc
					}
				}
			}
			return true
		})
	}
}

// externalInline are the types of other packages that flux-operator's types embed inline: their
// fields are walked through the same types, which this module imports too.
var externalInline = map[string]reflect.Type{
	"meta.ReconcileRequestStatus": reflect.TypeOf(meta.ReconcileRequestStatus{}),
	"meta.ForceRequestStatus":     reflect.TypeOf(meta.ForceRequestStatus{}),
	"metav1.LabelSelector":        reflect.TypeOf(metav1.LabelSelector{}),
}

// walk records the JSON path of every field reachable from the type expression: a field whose type
// is declared in the package is walked into; a type of another package is a leaf, unless embedded
// inline (externalInline). The ObjectMeta and the TypeMeta are not walked.
func (p *goPackage) walk(t *testing.T, expr ast.Expr, path string, out map[string]bool) {
	t.Helper()
	switch e := expr.(type) {
	case *ast.StarExpr:
		p.walk(t, e.X, path, out)
	case *ast.ArrayType:
		p.walk(t, e.Elt, path, out)
	case *ast.MapType:
		p.walk(t, e.Value, path, out)
	case *ast.Ident:
		if decl, ok := p.types[e.Name]; ok {
			p.walk(t, decl, path, out)
		}
	case *ast.StructType:
		for _, f := range e.Fields.List {
			name, inline := jsonName(f.Tag)
			if name == "-" || isObjectMeta(f.Type) {
				continue
			}
			if inline || (len(f.Names) == 0 && name == "") {
				if sel, ok := f.Type.(*ast.SelectorExpr); ok {
					key := sel.X.(*ast.Ident).Name + "." + sel.Sel.Name
					if key == "metav1.TypeMeta" {
						continue
					}
					typ, known := externalInline[key]
					if !known {
						t.Fatalf("%s embeds %s inline: add it to externalInline", path, key)
					}
					walkReflect(typ, path, out)
					continue
				}
				p.walk(t, f.Type, path, out)
				continue
			}
			child := path + "." + name
			out[child] = true
			p.walk(t, f.Type, child, out)
		}
	}
}

// isObjectMeta says whether a field's type is the object's or a list's metadata, which are
// Kubernetes', not the API's.
func isObjectMeta(expr ast.Expr) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "ObjectMeta" || sel.Sel.Name == "ListMeta")
}

// enum is the Enum marker of a field of a struct type, as its values.
func (p *goPackage) enum(t *testing.T, typ, field string) []string {
	t.Helper()
	doc := p.docs[typ+"."+field]
	if doc == nil {
		t.Fatalf("no doc comment on %s.%s", typ, field)
	}
	for _, c := range doc.List {
		if v, ok := strings.CutPrefix(c.Text, "// +kubebuilder:validation:Enum="); ok {
			return strings.Split(v, ";")
		}
	}
	t.Fatalf("no Enum marker on %s.%s", typ, field)
	return nil
}

func jsonName(tag *ast.BasicLit) (string, bool) {
	if tag == nil {
		return "", false
	}
	v := reflect.StructTag(strings.Trim(tag.Value, "`")).Get("json")
	name, opts, _ := strings.Cut(v, ",")
	return name, strings.Contains(opts, "inline")
}

// walkReflect records the JSON path of every field reachable from a Go type of ours.
func walkReflect(typ reflect.Type, path string, out map[string]bool) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ == reflect.TypeOf(metav1.Time{}) || typ == reflect.TypeOf(metav1.Duration{}) {
		return
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || f.Type == reflect.TypeOf(metav1.ObjectMeta{}) || f.Type == reflect.TypeOf(metav1.ListMeta{}) ||
			f.Type == reflect.TypeOf(metav1.TypeMeta{}):
			continue
		case f.Anonymous && (name == "" || strings.Contains(opts, "inline")):
			walkReflect(f.Type, path, out)
			continue
		case name == "":
			continue
		}
		child := path + "." + name
		out[child] = true
		walkReflect(f.Type, child, out)
	}
}
