// Package celbudget compiles the CEL expressions tenants write in Flux's APIs (a Receiver's
// filters, a Provider's commitStatusExpr) in the environment of fluxcd/pkg/runtime/cel, where
// Flux evaluates them, with a budget that Flux does not set: a bounded length and a cost limit.
// The callers add a deadline per evaluation.
package celbudget

import (
	"fmt"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

const (
	// MaxLength bounds the length of an expression, in code points.
	MaxLength = 4096
	// CostLimit bounds the cost of one evaluation (about as many field reads or loop
	// iterations): far more than an expression over names, labels and a payload's fields needs.
	CostLimit = 100_000
)

// Env is the environment of fluxcd/pkg/runtime/cel (the string, set and encoder extensions and
// optional types on) with each of vars an object (google.protobuf.Struct).
func Env(vars ...string) *cel.Env {
	opts := []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
		cel.ParserExpressionSizeLimit(MaxLength),
	}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.ObjectType("google.protobuf.Struct")))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		// The options are constants: a programming error.
		panic("celbudget: building the CEL environment: " + err.Error())
	}
	return env
}

// Compile checks an expression (it must parse, type-check and return out) and makes its program,
// whose evaluations stop at CostLimit and check their context every 100 iterations.
func Compile(env *cel.Env, expr string, out *cel.Type) (cel.Program, error) {
	if n := utf8.RuneCountInString(expr); n > MaxLength {
		// Not quoted: it would fill the event or condition that says so.
		return nil, fmt.Errorf("the CEL expression is %d code points long, more than %d", n, MaxLength)
	}
	ast, issues := env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("the CEL expression '%s' does not compile: %s", expr, issues.Err())
	}
	if !ast.OutputType().IsExactType(out) {
		return nil, fmt.Errorf("the CEL expression '%s' returns %s, not a %s", expr, ast.OutputType(), out)
	}
	prg, err := env.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("the CEL expression '%s': %w", expr, err)
	}
	return prg, nil
}
