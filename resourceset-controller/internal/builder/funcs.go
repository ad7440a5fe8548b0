package builder

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"text/template"

	sprig "github.com/go-task/slim-sprig/v3"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

const (
	// The delimiters of docs/resourceset.md: they do not clash with Helm's {{ }}.
	leftDelim  = "<<"
	rightDelim = ">>"

	inputsFunc = "inputs"
)

// funcs is built once: slim-sprig builds a new map on every call and
// text/template copies it into each template anyway. Every Build binds
// metered copies of these functions (templatebudget.Budget.FuncMap).
var funcs = func() template.FuncMap {
	fm := sprig.HermeticTxtFuncMap()
	fm["toYaml"] = toYAML
	fm["slugify"] = slugify
	fm["bool"] = toBool
	// The functions whose cost grows with an argument, bounded (sequences.go, strings.go).
	fm["until"] = until
	fm["untilStep"] = untilStep
	fm["seq"] = seq
	fm["uniq"] = uniq
	fm["mustUniq"] = mustUniq
	fm["repeat"] = repeat
	fm["indent"] = indent
	fm["nindent"] = nindent
	fm["replace"] = replace
	fm["join"] = join
	fm["split"] = split
	fm["splitn"] = splitn
	fm["splitList"] = splitList
	fm["regexReplaceAll"] = regexReplaceAll(false)
	fm["mustRegexReplaceAll"] = regexReplaceAll(false)
	fm["regexReplaceAllLiteral"] = regexReplaceAll(true)
	fm["mustRegexReplaceAllLiteral"] = regexReplaceAll(true)
	// The text/template builtins that print their arguments, so they are metered too
	// (a function of the map takes precedence over a builtin of the same name).
	maps.Copy(fm, templatebudget.Printers())
	// Placeholder so templates parse; every Build binds the real one (see bind.go).
	fm[inputsFunc] = func() map[string]any { return nil }
	return fm
}()

// metered are the functions every Build meters: funcs but the inputs placeholder, which each
// Build binds itself.
var metered = &templatebudget.Funcs{
	Map: func() template.FuncMap {
		fm := maps.Clone(funcs)
		delete(fm, inputsFunc)
		return fm
	}(),
	// They return one of their arguments or a part of one.
	Accessors: map[string]bool{
		"default": true, "coalesce": true, "ternary": true, "get": true, "dig": true,
		"first": true, "mustFirst": true, "last": true, "mustLast": true,
	},
	// They print or encode their arguments (the printing builtins are too).
	Serializers: map[string]bool{
		"toJson": true, "toPrettyJson": true, "toRawJson": true, "mustToJson": true,
		"mustToPrettyJson": true, "mustToRawJson": true, "toYaml": true, "toString": true,
		"toStrings": true, "cat": true, "quote": true, "squote": true, "join": true,
		"sortAlpha": true, "dict": true, "urlJoin": true,
	},
}

// newNamespace returns an empty template set configured the ResourceSet way.
// Each resources entry and the resourcesTemplate get their own set, so a
// `define` in one cannot replace a `define` in another.
func newNamespace(name string) *template.Template {
	return template.New(name).
		Delims(leftDelim, rightDelim).
		Option("missingkey=error").
		Funcs(funcs)
}

// toYAML is Helm's toYaml, except that a value YAML cannot represent is an
// error rather than an empty string that would silently change the object.
func toYAML(v any) (string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// toBool is the bool function of docs/resourceset.md: inputs often carry booleans as strings
// ("true"), and a typo must not silently become false.
func toBool(v any) (bool, error) {
	switch v := v.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, fmt.Errorf("cannot convert %q to a boolean", v)
		}
		return b, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() != 0, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint() != 0, nil
	case reflect.Float32, reflect.Float64:
		return rv.Float() != 0, nil
	}
	return false, fmt.Errorf("cannot convert %T to a boolean", v)
}
