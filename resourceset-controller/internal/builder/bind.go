package builder

import (
	"bytes"
	"fmt"
	"io"
	"text/template"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

// binding is the private state of one Build call: a clone of every template
// set with the inputs function bound to the input being rendered. Cloning once
// per Build (not per input) keeps parsing and func-map copies out of the input
// loop, and lets concurrent Builds share one Templates.
type binding struct {
	current   Input
	budget    *templatebudget.Budget
	buf       bytes.Buffer
	out       io.Writer // writes to buf within the budget
	resources []*renderer
	document  *template.Template
}

// renderer executes the templates of one resources entry.
type renderer struct {
	entry     *resourceTemplate
	templates []*template.Template // bound clones, indexed like entry.names
	budget    *templatebudget.Budget
	buf       *bytes.Buffer
	out       io.Writer
}

// bind clones the templates for one Build, with its inputs function and the functions metered
// by its budget.
func (t *Templates) bind(bud *templatebudget.Budget) (*binding, error) {
	b := &binding{budget: bud}
	b.out = bud.Writer(&b.buf)
	bound := bud.FuncMap(metered)
	bound[inputsFunc] = func() map[string]any { return b.current }
	for _, rt := range t.resources {
		r := &renderer{entry: rt, budget: bud, buf: &b.buf, out: b.out}
		if rt.ns != nil {
			ns, err := rt.ns.Clone()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rt.name, err)
			}
			ns.Funcs(bound)
			r.templates = make([]*template.Template, len(rt.names))
			for i, name := range rt.names {
				r.templates[i] = ns.Lookup(name)
			}
		}
		b.resources = append(b.resources, r)
	}
	if t.document != nil {
		doc, err := t.document.Clone()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", resourcesTemplateName, err)
		}
		b.document = doc.Funcs(bound)
	}
	return b, nil
}

// execute runs one template of the entry and returns its output.
func (r *renderer) execute(i int) (string, error) {
	r.buf.Reset()
	if err := r.templates[i].Execute(r.out, nil); err != nil {
		return "", err
	}
	return r.buf.String(), nil
}

// copyInput copies the maps and lists of an input set, so templates that
// mutate their data (sprig's set, unset, append on a map) change neither the
// caller's inputs nor the next input set.
func copyInput(in Input) Input {
	if in == nil {
		return nil
	}
	out := make(Input, len(in))
	for k, v := range in {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyInput(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
