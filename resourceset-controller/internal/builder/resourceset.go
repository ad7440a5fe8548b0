package builder

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// ForResourceSet renders a ResourceSet with the exported inputs of its providers (one group per
// provider): the objects the controller applies and `kubectl resourceset build` prints.
//
// A ResourceSet without inputs and without inputsFrom renders its resources once, with empty
// inputs (plain resources need no matrix); one whose providers export nothing renders nothing,
// so what it applied before is pruned. Under Permute, a provider that exports nothing is left
// out of the product unless spec.inputStrategy.includeEmptyProviders is set. The build stops
// soon after ctx is done.
func ForResourceSet(ctx context.Context, rset *rsv1.ResourceSet, groups []inputs.Group) ([]*unstructured.Unstructured, error) {
	r, err := RenderResourceSet(ctx, rset, groups)
	return r.Objects, err
}

// Rendered is what a ResourceSet renders: the objects, and how many inputs they were rendered
// with (the combinations under Permute).
type Rendered struct {
	Objects []*unstructured.Unstructured
	Inputs  int
	// Failed are the inputs left out by spec.isolateInputFailures, with why; their objects are
	// not in Objects.
	Failed []FailedInput
	// InputOf is, under spec.isolateInputFailures, the index of the input each object of
	// Objects came from (the first, for an object several render).
	InputOf []int
	// Steps are the spec.steps, in order, each with the number of Objects it holds (Objects
	// lists them step after step); empty without steps.
	Steps []Step
}

// Step is one of spec.steps as rendered.
type Step struct {
	Name    string
	Size    int
	Timeout time.Duration
}

// RenderResourceSet is ForResourceSet, with the number of inputs.
func RenderResourceSet(ctx context.Context, rset *rsv1.ResourceSet, groups []inputs.Group) (Rendered, error) {
	return render(ctx, rset, groups, false, nil)
}

// RenderResourceSetLeavingOut is RenderResourceSet under spec.isolateInputFailures with the
// inputs of leftOut (by index, with why) left out from the start: those whose objects the API
// server refused.
func RenderResourceSetLeavingOut(ctx context.Context, rset *rsv1.ResourceSet, groups []inputs.Group, leftOut []FailedInput) (Rendered, error) {
	return render(ctx, rset, groups, false, leftOut)
}

// RenderResourceSetLegacyIDs is RenderResourceSet with the ids Sluice gave Permute combinations
// before it took flux-operator's (inputs.LegacyPermuteIDs), for a ResourceSet whose objects are
// named after them. Under Flatten it is RenderResourceSet.
func RenderResourceSetLegacyIDs(ctx context.Context, rset *rsv1.ResourceSet, groups []inputs.Group) (Rendered, error) {
	return render(ctx, rset, groups, true, nil)
}

func render(ctx context.Context, rset *rsv1.ResourceSet, groups []inputs.Group, legacyIDs bool, leftOut []FailedInput) (Rendered, error) {
	if len(rset.Spec.Steps) > 0 && (len(rset.Spec.Resources) > 0 || strings.TrimSpace(rset.Spec.ResourcesTemplate) != "") {
		// The API server refuses it too; a file given to `kubectl resourceset build` has not met it.
		return Rendered{}, errors.New("spec.steps is mutually exclusive with spec.resources and spec.resourcesTemplate: move them into a step")
	}
	inline, err := inputs.FromAPI(rset.Spec.Inputs)
	if err != nil {
		return Rendered{}, fmt.Errorf("spec.inputs: %w", err)
	}
	all := []map[string]any{{}}
	if len(inline) > 0 || len(rset.Spec.InputsFrom) > 0 {
		own := inputs.Group{APIVersion: rsv1.GroupVersion.String(), Kind: rsv1.ResourceSetKind,
			Namespace: rset.Namespace, Name: rset.Name, Inputs: inline}
		if all, err = inputs.Combine(rset.GetInputStrategy(), own, groups, rset.IncludesEmptyProviders(), inputs.DefaultLimit); err != nil {
			return Rendered{}, err
		}
		if legacyIDs && rset.GetInputStrategy() == rsv1.InputStrategyPermute {
			inputs.LegacyPermuteIDs(all, own, groups)
		}
	}
	if len(rset.Spec.InputDefaults) > 0 {
		defaults, err := inputs.FromAPI([]rsv1.ResourceSetInput{rset.Spec.InputDefaults})
		if err != nil {
			return Rendered{}, fmt.Errorf("spec.inputDefaults: %w", err)
		}
		all = inputs.WithDefaults(all, defaults[0])
	}
	var common *CommonMetadata
	if cm := rset.Spec.CommonMetadata; cm != nil {
		common = &CommonMetadata{Labels: cm.Labels, Annotations: cm.Annotations}
	}
	if len(rset.Spec.Steps) == 0 {
		if rset.Spec.IsolateInputFailures {
			return isolated(ctx, rset, inline, all, common, leftOut)
		}
		objects, err := build(ctx, rset.Spec.Resources, rset.Spec.ResourcesTemplate, all, common)
		return Rendered{Objects: objects, Inputs: len(all)}, permuteHint(rset, inline, err)
	}
	out := Rendered{Inputs: len(all)}
	inStep := map[objectKey]string{}
	for _, step := range rset.Spec.Steps {
		objects, err := build(ctx, step.Resources, step.ResourcesTemplate, all, common)
		if err != nil {
			return Rendered{}, fmt.Errorf("step %q: %w", step.Name, permuteHint(rset, inline, err))
		}
		for _, o := range objects {
			k := keyOf(o)
			if other, dup := inStep[k]; dup {
				return Rendered{}, fmt.Errorf("%s '%s' is in steps %q and %q: an object belongs to one step", o.GetKind(),
					strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"), other, step.Name)
			}
			inStep[k] = step.Name
		}
		var timeout time.Duration
		if step.Timeout != nil {
			timeout = step.Timeout.Duration
		}
		out.Objects = append(out.Objects, objects...)
		out.Steps = append(out.Steps, Step{Name: step.Name, Size: len(objects), Timeout: timeout})
	}
	return out, nil
}

// build renders resources and a resourcesTemplate with the inputs.
func build(ctx context.Context, resources []*apiextensionsv1.JSON, template string, all []map[string]any, common *CommonMetadata) ([]*unstructured.Unstructured, error) {
	t, err := parseAPI(resources, template)
	if err != nil {
		return nil, err
	}
	return t.Build(ctx, all, common)
}

// parseAPI parses the resources entries of the API and a resourcesTemplate.
func parseAPI(resources []*apiextensionsv1.JSON, template string) (*Templates, error) {
	raws := make([][]byte, len(resources))
	for i, r := range resources {
		if r != nil {
			raws[i] = r.Raw
		}
	}
	return Parse(raws, template)
}

// missingKey is how text/template names a key a map does not have.
var missingKey = regexp.MustCompile(`map has no entry for key "([^"]+)"`)

// permuteHint adds to err, when a template misses a key of the ResourceSet's own inputs under
// Permute, where those inputs are: under the ResourceSet's name, as in flux-operator (Sluice
// merged them at the top level before, so templates written for it stop here, and nothing is
// applied or deleted).
func permuteHint(rset *rsv1.ResourceSet, inline []map[string]any, err error) error {
	if err == nil || rset.GetInputStrategy() != rsv1.InputStrategyPermute {
		return err
	}
	m := missingKey.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	for _, in := range inline {
		if _, ok := in[m[1]]; ok {
			return fmt.Errorf("%w: under the Permute strategy the ResourceSet's own inputs are under its name: << inputs.%s.%s >>",
				err, inputs.NormalizeKeyForTemplate(rset.Name), m[1])
		}
	}
	return err
}
