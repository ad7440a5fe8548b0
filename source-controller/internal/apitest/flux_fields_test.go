package apitest

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	fluxv1 "github.com/fluxcd/source-controller/api/v1"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Every JSON field of Flux's source.toolkit.fluxcd.io/v1 kinds (the Go types of
// github.com/fluxcd/source-controller/api, pinned in go.mod) exists in ours, at the same path,
// down to the fields of nested types: the API server would reject a Flux manifest that sets
// one we lack.
func TestEveryFluxFieldExists(t *testing.T) {
	var missing []string
	for _, kind := range []struct {
		name       string
		flux, ours any
	}{
		{"GitRepository", fluxv1.GitRepository{}, sourcev1.GitRepository{}},
		{"HelmRepository", fluxv1.HelmRepository{}, sourcev1.HelmRepository{}},
		{"HelmChart", fluxv1.HelmChart{}, sourcev1.HelmChart{}},
		{"OCIRepository", fluxv1.OCIRepository{}, sourcev1.OCIRepository{}},
		{"Bucket", fluxv1.Bucket{}, sourcev1.Bucket{}},
	} {
		missing = append(missing, missingFields(kind.name, reflect.TypeOf(kind.flux), reflect.TypeOf(kind.ours))...)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("fields of Flux's API missing from ours:\n%s", strings.Join(missing, "\n"))
	}
}

// The walk itself finds a missing field (it is not blind to nesting or inlining).
func TestMissingFieldsFindsNestedAndInlinedFields(t *testing.T) {
	type inner struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	type inline struct {
		C string `json:"c"`
	}
	type flux struct {
		inline `json:",inline"`
		Spec   *inner  `json:"spec"`
		List   []inner `json:"list"`
	}
	type ours struct {
		Spec *struct {
			A string `json:"a"`
		} `json:"spec"`
		List []struct {
			B string `json:"b"`
		} `json:"list"`
	}
	got := missingFields("Kind", reflect.TypeOf(flux{}), reflect.TypeOf(ours{}))
	sort.Strings(got)
	if want := []string{"Kind.c", "Kind.list[].a", "Kind.spec.b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("missingFields = %v, want %v", got, want)
	}
}

// missingFields lists the JSON paths of flux's fields that ours lacks, descending into the
// structs, pointers, slices and maps of both.
func missingFields(path string, flux, ours reflect.Type) []string {
	flux, fluxList := elem(flux)
	ours, _ = elem(ours)
	if fluxList {
		path += "[]"
	}
	if flux.Kind() != reflect.Struct || ours.Kind() != reflect.Struct {
		return nil
	}
	have := jsonFields(ours)
	var missing []string
	for name, ft := range jsonFields(flux) {
		ot, ok := have[name]
		if !ok {
			missing = append(missing, path+"."+name)
			continue
		}
		missing = append(missing, missingFields(path+"."+name, ft, ot)...)
	}
	return missing
}

// elem is the type a field holds, through pointers, slices and maps; list says whether a slice
// or map was crossed.
func elem(t reflect.Type) (_ reflect.Type, list bool) {
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Slice, reflect.Map:
			t, list = t.Elem(), true
		default:
			return t, list
		}
	}
}

// jsonFields are the fields of a struct by JSON name, those of inlined structs included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name == "" && (strings.Contains(opts, "inline") || f.Anonymous):
			if inner, _ := elem(f.Type); inner.Kind() == reflect.Struct {
				for n, ft := range jsonFields(inner) {
					fields[n] = ft
				}
			}
		case name != "":
			fields[name] = f.Type
		}
	}
	return fields
}
