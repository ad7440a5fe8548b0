package dependency

import (
	"errors"
	"fmt"
)

// NotReadyError says a dependency is not met yet: the object is missing, not ready, its readyExpr
// evaluated to false or failed at run time (a field it reads may appear later). The caller waits
// and checks again (RequeueAfter with a reason, no error).
type NotReadyError struct {
	// Dependency names the unmet dependency, e.g. "v1/Secret dev/my-gate".
	Dependency string
	// Message is the whole message, naming the dependency and why it is not met.
	Message string
	// Err is the CEL evaluation error, when the readyExpr failed at run time.
	Err error
}

func (e *NotReadyError) Error() string { return e.Message }

func (e *NotReadyError) Unwrap() error { return e.Err }

// CompileError says a readyExpr does not compile (syntax error, undeclared function, result not
// bool). No retry can fix it: the caller reports it as Stalled until the spec changes.
type CompileError struct {
	// Dependency names the dependency whose readyExpr failed; empty when returned by Cache.Compile,
	// which does not know the dependency.
	Dependency string
	// Noun names the entry: "dependency" when empty.
	Noun string
	// Expr is the expression text.
	Expr string
	// Detail is CEL's report, with the position and a pointer into the expression, e.g.
	// "ERROR: <input>:1:12: Syntax error: ...".
	Detail string
}

func (e *CompileError) Error() string {
	if e.Dependency == "" {
		return "readyExpr: " + e.Detail
	}
	noun := e.Noun
	if noun == "" {
		noun = "dependency"
	}
	return fmt.Sprintf("readyExpr of %s '%s': %s", noun, e.Dependency, e.Detail)
}

// UnknownKindError says the apiVersion/kind of a dependency is not served by the cluster (the
// RESTMapper has no match for it). It is terminal: the caller reports it as Stalled.
type UnknownKindError struct {
	Dependency string
	APIVersion string
	Kind       string
	// Err is the no-match error of the RESTMapper.
	Err error
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("dependency '%s': kind %s of apiVersion %s is not served by the cluster", e.Dependency, e.Kind, e.APIVersion)
}

func (e *UnknownKindError) Unwrap() error { return e.Err }

// InvalidRefError says a dependency lacks a required field or has a malformed apiVersion. The API
// rejects such specs at admission; this is the terminal fallback for objects that bypassed it.
type InvalidRefError struct {
	// Index is the position of the entry in spec.dependsOn.
	Index  int
	Reason string
}

func (e *InvalidRefError) Error() string {
	return fmt.Sprintf("dependsOn[%d]: %s", e.Index, e.Reason)
}

// IsTerminal tells whether err is an error no retry can fix (*CompileError, *UnknownKindError,
// *InvalidRefError), which the caller reports as Stalled.
func IsTerminal(err error) bool {
	var ce *CompileError
	var uk *UnknownKindError
	var ir *InvalidRefError
	return errors.As(err, &ce) || errors.As(err, &uk) || errors.As(err, &ir)
}

// IsNotReady tells whether err says a dependency is not met yet.
func IsNotReady(err error) bool {
	var nr *NotReadyError
	return errors.As(err, &nr)
}
