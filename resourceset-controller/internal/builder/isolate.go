package builder

import (
	"context"
	"fmt"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// FailedInput is an input left out of a build by spec.isolateInputFailures.
type FailedInput struct {
	// ID is the input's id (inputs.id), Index its place among the inputs.
	ID    string
	Index int
	// Message is the template's error.
	Message string
}

// isolated renders the resources with every input whose templates render, leaving out the
// inputs whose templates fail (spec.isolateInputFailures): each failure is rendered again
// without that input, so n failures cost n+1 builds. A failure of the whole build (a limit, the
// deadline, a template that does not parse) is not isolated.
func isolated(ctx context.Context, rset *rsv1.ResourceSet, inline, all []map[string]any, common *CommonMetadata) (Rendered, error) {
	out := Rendered{Inputs: len(all)}
	// left maps the inputs still in the build to their place among all of them.
	left := make([]int, len(all))
	for i := range left {
		left[i] = i
	}
	for {
		in := make([]map[string]any, len(left))
		for j, i := range left {
			in[j] = all[i]
		}
		objects, err := build(ctx, rset.Spec.Resources, rset.Spec.ResourcesTemplate, in, common)
		if err == nil {
			out.Objects = objects
			return out, nil
		}
		ie, ok := AsInputError(err)
		if !ok || ie.Index >= len(left) {
			return Rendered{}, permuteHint(rset, inline, err)
		}
		index := left[ie.Index]
		id, _ := all[index]["id"].(string)
		msg := permuteHint(rset, inline, ie.Err).Error()
		out.Failed = append(out.Failed, FailedInput{ID: id, Index: index,
			Message: fmt.Sprintf("inputs[%d]%s", index, trimIndex(msg))})
		left = append(left[:ie.Index], left[ie.Index+1:]...)
	}
}

// trimIndex drops the "inputs[i]" the build put first, whose i counts the inputs left.
func trimIndex(msg string) string {
	for i := 0; i < len(msg); i++ {
		if msg[i] == ']' {
			return msg[i+1:]
		}
	}
	return msg
}
