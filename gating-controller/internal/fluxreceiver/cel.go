package fluxreceiver

import (
	"context"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// The CEL filters (spec.resourceFilter, spec.resources[].filter) run in the environment of
// fluxcd/pkg/runtime/cel, where Flux evaluates them: `res` and `req` are objects
// (google.protobuf.Struct), the string, set and encoder extensions and optional types are on, the
// result must be a bool. A tenant writes them and they read a caller's body, so they also get a
// budget that Flux does not set: a bounded length, a cost limit and a deadline.
const (
	// maxFilterLength bounds the length of an expression, in code points.
	maxFilterLength = 4096
	// filterCostLimit bounds the cost of one evaluation (about as many field reads or loop
	// iterations): far more than a filter on names, labels and a payload's fields needs.
	filterCostLimit = 100_000
	// filterTimeout bounds the time of the evaluations of one request.
	filterTimeout = 2 * time.Second
)

var filterEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
		cel.ParserExpressionSizeLimit(maxFilterLength),
		cel.Variable("res", cel.ObjectType("google.protobuf.Struct")),
		cel.Variable("req", cel.ObjectType("google.protobuf.Struct")),
	)
	if err != nil {
		// The options are constants: a programming error.
		panic("fluxreceiver: building the CEL environment: " + err.Error())
	}
	return env
}()

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
	ast, issues := filterEnv.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("the CEL expression '%s' does not compile: %s", expr, issues.Err())
	}
	if ast.OutputType() != types.BoolType {
		return nil, fmt.Errorf("the CEL expression '%s' returns %s, not a bool", expr, ast.OutputType())
	}
	prg, err := filterEnv.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(filterCostLimit),
		cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("the CEL expression '%s': %w", expr, err)
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
