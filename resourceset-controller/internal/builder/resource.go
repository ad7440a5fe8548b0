package builder

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

// resourceTemplate is one spec.resources entry, compiled once: the JSON tree
// with every templated string replaced by a reference to its parsed template.
// Rendering walks the tree instead of printing and re-parsing YAML, which keeps
// the per-input cost to executing the templates and decoding typed values.
type resourceTemplate struct {
	name  string             // resources[2]
	root  valueNode          // the compiled entry
	ns    *template.Template // the entry's templates; nil when it has none
	names []string           // template names in ns, indexed by templateString.index
}

// valueNode renders one JSON value of a resources entry.
type valueNode interface {
	render(r *renderer) (any, error)
}

// parseResource compiles the JSON document of one resources entry.
func parseResource(name string, raw []byte) (*resourceTemplate, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", name, err)
	}
	if v == nil {
		return nil, fmt.Errorf("%s: empty resource", name)
	}
	rt := &resourceTemplate{name: name}
	c := &compiler{rt: rt, used: map[string]bool{}}
	if rt.root, err = c.compile(v, name); err != nil {
		return nil, err
	}
	if rt.ns != nil {
		templatebudget.Guard(rt.ns, metered)
	}
	return rt, nil
}

type compiler struct {
	rt   *resourceTemplate
	used map[string]bool
}

func (c *compiler) compile(v any, path string) (valueNode, error) {
	switch v := v.(type) {
	case string:
		if !strings.Contains(v, leftDelim) {
			return newStatic(v), nil
		}
		return c.parseString(path, v)
	case map[string]any:
		// Sorted keys: template order and the first error are deterministic.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n := &mapValue{path: path, fields: make([]field, 0, len(keys))}
		static := true
		for _, k := range keys {
			f := field{key: k, keyTemplate: -1}
			if strings.Contains(k, leftDelim) {
				kt, err := c.parseString(joinKey(path, k)+" (key)", k)
				if err != nil {
					return nil, err
				}
				f.keyTemplate = kt.index
				static = false
			}
			val, err := c.compile(v[k], joinKey(path, k))
			if err != nil {
				return nil, err
			}
			if _, ok := val.(staticValue); !ok {
				static = false
			}
			f.value = val
			n.fields = append(n.fields, f)
		}
		if static {
			return newStatic(v), nil
		}
		return n, nil
	case []any:
		n := &listValue{items: make([]valueNode, len(v))}
		static := true
		for i, e := range v {
			item, err := c.compile(e, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			if _, ok := item.(staticValue); !ok {
				static = false
			}
			n.items[i] = item
		}
		if static {
			return newStatic(v), nil
		}
		return n, nil
	default:
		return newStatic(v), nil
	}
}

// parseString parses one templated string into the entry's template set. The
// template is named after the string's path, so text/template errors read
// "template: resources[1].spec.values.replicaCount:1: function "nope" not defined".
func (c *compiler) parseString(path, text string) (*templateString, error) {
	if c.rt.ns == nil {
		// The set's own (never executed) template must not take a path's name:
		// a whole-entry template is named resources[2] itself.
		setName := c.rt.name + " templates"
		c.rt.ns = newNamespace(setName)
		c.used[setName] = true
	}
	name := path
	for i := 2; c.used[name]; i++ { // a "." inside keys could make two paths equal
		name = fmt.Sprintf("%s#%d", path, i)
	}
	c.used[name] = true
	t, err := c.rt.ns.New(name).Parse(text)
	if err != nil {
		return nil, err
	}
	c.rt.names = append(c.rt.names, name)
	return &templateString{
		index: len(c.rt.names) - 1,
		path:  path,
		typed: isWholeValue(t.Tree),
	}, nil
}

// isWholeValue reports whether a template is a single action or control block
// with nothing around it but whitespace: its output is then the whole value and
// is read as YAML, as if the action had been written unquoted in YAML.
func isWholeValue(tree *parse.Tree) bool {
	if tree == nil || tree.Root == nil {
		return false
	}
	actions := 0
	for _, n := range tree.Root.Nodes {
		if text, ok := n.(*parse.TextNode); ok {
			if strings.TrimSpace(string(text.Text)) != "" {
				return false
			}
			continue
		}
		actions++
	}
	return actions == 1
}

// joinKey appends a map key to a path, bracketing keys that are not plain
// names: metadata.annotations["fluxcd.controlplane.io/reconcile"].
func joinKey(path, key string) string {
	for _, r := range key {
		if !(r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return path + "[" + strconv.Quote(key) + "]"
		}
	}
	return path + "." + key
}

// staticValue is a value without templates; it is copied for every object so
// objects never share maps, and each copy counts in MaxRenderedSize.
type staticValue struct {
	v    any
	size int64
}

func newStatic(v any) staticValue {
	return staticValue{v: v, size: templatebudget.SizeOf(v, math.MaxInt64)}
}

func (n staticValue) render(r *renderer) (any, error) {
	if err := r.budget.Render(n.size); err != nil {
		return nil, err
	}
	return runtime.DeepCopyJSONValue(n.v), nil
}

type field struct {
	key         string
	keyTemplate int // index of the key's template, -1 for a literal key
	value       valueNode
}

type mapValue struct {
	path   string
	fields []field
}

func (n *mapValue) render(r *renderer) (any, error) {
	out := make(map[string]any, len(n.fields))
	for _, f := range n.fields {
		key := f.key
		if f.keyTemplate >= 0 {
			var err error
			if key, err = r.execute(f.keyTemplate); err != nil {
				return nil, err
			}
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s: duplicate key %q after rendering", n.path, key)
		}
		v, err := f.value.render(r)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

type listValue struct{ items []valueNode }

func (n *listValue) render(r *renderer) (any, error) {
	out := make([]any, len(n.items))
	for i, item := range n.items {
		v, err := item.render(r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// templateString is a templated string of a resources entry.
type templateString struct {
	index int    // into resourceTemplate.names and renderer.templates
	path  string // for error messages
	typed bool   // see isWholeValue
}

func (n *templateString) render(r *renderer) (any, error) {
	out, err := r.execute(n.index)
	if err != nil {
		return nil, err
	}
	if !n.typed {
		return out, nil
	}
	v, err := decodeValue(out)
	if err != nil {
		return nil, fmt.Errorf("%s: rendered value %q is not valid YAML: %w", n.path, truncate(out), err)
	}
	return v, nil
}

// truncate keeps error messages readable when a template renders a big blob.
func truncate(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
