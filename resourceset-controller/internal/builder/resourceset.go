package builder

import (
	"context"
	"fmt"

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
}

// RenderResourceSet is ForResourceSet, with the number of inputs.
func RenderResourceSet(ctx context.Context, rset *rsv1.ResourceSet, groups []inputs.Group) (Rendered, error) {
	inline, err := inputs.FromAPI(rset.Spec.Inputs)
	if err != nil {
		return Rendered{}, fmt.Errorf("spec.inputs: %w", err)
	}
	all := []map[string]any{{}}
	if len(inline) > 0 || len(rset.Spec.InputsFrom) > 0 {
		if !rset.IncludesEmptyProviders() {
			groups = inputs.WithoutEmpty(groups)
		}
		if all, err = inputs.Combine(rset.GetInputStrategy(), inline, groups, inputs.DefaultLimit); err != nil {
			return Rendered{}, err
		}
	}
	raws := make([][]byte, len(rset.Spec.Resources))
	for i, r := range rset.Spec.Resources {
		if r != nil {
			raws[i] = r.Raw
		}
	}
	t, err := Parse(raws, rset.Spec.ResourcesTemplate)
	if err != nil {
		return Rendered{}, err
	}
	var common *CommonMetadata
	if cm := rset.Spec.CommonMetadata; cm != nil {
		common = &CommonMetadata{Labels: cm.Labels, Annotations: cm.Annotations}
	}
	objects, err := t.Build(ctx, all, common)
	return Rendered{Objects: objects, Inputs: len(all)}, err
}
