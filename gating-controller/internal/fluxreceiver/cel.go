package fluxreceiver

import (
	"context"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/sluice-gitops/sluice/gating-controller/internal/celbudget"
)

// The CEL filters (spec.resourceFilter, spec.resources[].filter) run in the environment of
// fluxcd/pkg/runtime/cel, where Flux evaluates them: `res` and `req` are objects, the result must
// be a bool. A tenant writes them and they read a caller's body, so they also get the budget of
// package celbudget and a deadline for the evaluations of one request.
const filterTimeout = 2 * time.Second

var filterEnv = celbudget.Env("res", "req")

// filter is a compiled CEL filter.
type filter struct {
	expr    string
	program cel.Program
}

// compileFilter checks an expression: it must parse, type-check and return a bool. An empty
// expression is no filter (nil).
func compileFilter(expr string) (*filter, error) {
	if expr == "" {
		return nil, nil
	}
	prg, err := celbudget.Compile(filterEnv, expr, types.BoolType)
	if err != nil {
		return nil, err
	}
	return &filter{expr: expr, program: prg}, nil
}

// accepts evaluates the filter for one object (res: its apiVersion, kind and metadata) and the
// request's body (req). A nil filter accepts everything.
func (f *filter) accepts(ctx context.Context, res, req map[string]any) (bool, error) {
	if f == nil {
		return true, nil
	}
	out, _, err := f.program.ContextEval(ctx, map[string]any{"res": res, "req": req})
	if err != nil {
		return false, fmt.Errorf("evaluating the CEL expression '%s': %w", f.expr, err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the CEL expression '%s' did not return a bool", f.expr)
	}
	return bool(b), nil
}
