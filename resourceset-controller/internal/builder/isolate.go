package builder

import (
	"context"
	"fmt"
	"strings"

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
// inputs whose templates fail (spec.isolateInputFailures), and those of leftOut from the start:
// each failure is rendered again without that input, so n failures cost n+1 builds. A failure of
// the whole build (a limit, the deadline, a template that does not parse) is not isolated.
func isolated(ctx context.Context, rset *rsv1.ResourceSet, inline, all []map[string]any, common *CommonMetadata, leftOut []FailedInput) (Rendered, error) {
	out := Rendered{Inputs: len(all)}
	skip := map[int]bool{}
	for _, f := range leftOut {
		if f.ID == "" && f.Index < len(all) {
			f.ID = inputID(all[f.Index])
		}
		out.Failed = append(out.Failed, f)
		skip[f.Index] = true
	}
	// left maps the inputs still in the build to their place among all of them.
	var left []int
	for i := range all {
		if !skip[i] {
			left = append(left, i)
		}
	}
	t, err := parseAPI(rset.Spec.Resources, rset.Spec.ResourcesTemplate)
	if err != nil {
		return Rendered{}, err
	}
	for {
		in := make([]Input, len(left))
		for j, i := range left {
			in[j] = all[i]
		}
		objects, inputOf, err := t.BuildTracked(ctx, in, common)
		if err == nil {
			out.Objects = objects
			for _, j := range inputOf {
				out.InputOf = append(out.InputOf, left[j])
			}
			return out, nil
		}
		ie, ok := AsInputError(err)
		if !ok || ie.Index >= len(left) {
			return Rendered{}, permuteHint(rset, inline, err)
		}
		index := left[ie.Index]
		msg := permuteHint(rset, inline, ie.Err).Error()
		out.Failed = append(out.Failed, FailedInput{ID: inputID(all[index]), Index: index,
			Message: fmt.Sprintf("inputs[%d]%s", index, trimIndex(msg))})
		left = append(left[:ie.Index], left[ie.Index+1:]...)
	}
}

// inputID is an input's id, empty when it has none.
func inputID(in map[string]any) string {
	id, _ := in["id"].(string)
	return id
}

// trimIndex drops the "inputs[i]" the build put first, whose i counts the inputs left.
func trimIndex(msg string) string {
	if _, rest, ok := strings.Cut(msg, "]"); ok {
		return rest
	}
	return msg
}
