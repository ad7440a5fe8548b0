package builder

import (
	"context"
	"fmt"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

// Input is one input set: arbitrary nested JSON values (maps, slices, strings,
// float64/int64, bools).
type Input = map[string]any

// Templates holds the parsed templates of one ResourceSet; parse once, execute
// per input. A Templates is safe for concurrent use by several Build calls.
type Templates struct {
	resources []*resourceTemplate
	document  *template.Template // resourcesTemplate; nil when blank
}

// Parse parses every entry of resources (each a JSON document of one object
// template, as stored in spec.resources []*apiextensionsv1.JSON: pass their
// .Raw bytes) and the multi-document YAML string resourcesTemplate. Errors say
// which entry (resources[2], with the path of the string inside it, or
// resourcesTemplate) and the template line.
func Parse(resources [][]byte, resourcesTemplate string) (*Templates, error) {
	t := &Templates{resources: make([]*resourceTemplate, 0, len(resources))}
	for i, raw := range resources {
		rt, err := parseResource(fmt.Sprintf("resources[%d]", i), raw)
		if err != nil {
			return nil, err
		}
		t.resources = append(t.resources, rt)
	}
	if strings.TrimSpace(resourcesTemplate) != "" {
		doc, err := newNamespace(resourcesTemplateName).Parse(resourcesTemplate)
		if err != nil {
			return nil, err // "template: resourcesTemplate:12: ..."
		}
		templatebudget.Guard(doc, metered)
		t.document = doc
	}
	return t, nil
}

// Build executes the templates for every input and returns the objects:
//   - each resources entry for every input, in order, then the resourcesTemplate documents of
//     every input, as flux-operator orders them;
//   - objects whose metadata.annotations["fluxcd.controlplane.io/reconcile"] is
//     "disabled" are dropped (before deduplication, so a disabled copy does not
//     hide an enabled one rendered for another input);
//   - duplicates on apiVersion group + kind + namespace + name are dropped, the
//     first wins: resources win over resourcesTemplate, and
//     an object shared by every input is returned once;
//   - common labels and annotations are set on every object, overriding;
//   - empty documents (only whitespace or comments) are skipped;
//   - output that is not a Kubernetes object is an error naming the input and
//     the entry.
//
// With zero inputs nothing is rendered: objects are generated per input.
// Build does not modify inputs.
//
// A build stays within the limits of limits.go and stops soon after ctx is done (its
// error then wraps ctx.Err()); the errors of the other limits name the limit.
func (t *Templates) Build(ctx context.Context, inputs []Input, common *CommonMetadata) ([]*unstructured.Unstructured, error) {
	objects, _, err := t.BuildTracked(ctx, inputs, common)
	return objects, err
}

// BuildTracked is Build that also says, for each object, the index of the input it came from
// (the first one, for an object several inputs render).
func (t *Templates) BuildTracked(ctx context.Context, inputs []Input, common *CommonMetadata) ([]*unstructured.Unstructured, []int, error) {
	if len(inputs) == 0 {
		return []*unstructured.Unstructured{}, nil, nil
	}
	bud := templatebudget.New(ctx, limits)
	b, err := t.bind(bud)
	if err != nil {
		return nil, nil, err
	}
	out := newDedup()
	add := func(v any, input int) error {
		obj, err := toObject(v)
		if err != nil {
			return err
		}
		if !isDisabled(obj) {
			out.add(obj, input)
		}
		return nil
	}
	// One copy of each input, shared by its templates: a template function that changes its
	// input (sprig's set) changes it for the next templates of the same input only.
	copies := make([]Input, len(inputs))
	for i, in := range inputs {
		copies[i] = copyInput(in)
	}
	// flux-operator's order: each resources entry for every input, then the resourcesTemplate
	// documents input after input.
	for _, r := range b.resources {
		for i := range copies {
			if err := bud.Alive(); err != nil {
				return nil, nil, fmt.Errorf("inputs[%d]: %s: %w", i, r.entry.name, err)
			}
			b.current = copies[i]
			v, err := r.entry.root.render(r)
			if err != nil {
				return nil, nil, inputError(i, fmt.Errorf("inputs[%d]: %w", i, err))
			}
			if v == nil {
				continue // a whole-entry template that rendered nothing
			}
			if err := add(v, i); err != nil {
				return nil, nil, inputError(i, fmt.Errorf("inputs[%d]: %s: %w", i, r.entry.name, err))
			}
		}
	}
	for i := range copies {
		if b.document == nil {
			break
		}
		if err := bud.Alive(); err != nil {
			return nil, nil, fmt.Errorf("inputs[%d]: %w", i, err)
		}
		b.current = copies[i]
		docs, err := b.renderDocuments()
		if err != nil {
			return nil, nil, inputError(i, fmt.Errorf("inputs[%d]: %w", i, err))
		}
		for _, d := range docs {
			if err := add(d.value, i); err != nil {
				return nil, nil, inputError(i, fmt.Errorf("inputs[%d]: %s document #%d: %w", i, resourcesTemplateName, d.number, err))
			}
		}
	}
	for _, obj := range out.objects {
		applyCommonMetadata(obj, common)
	}
	return out.objects, out.inputOf, nil
}
