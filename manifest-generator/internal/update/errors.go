package update

import (
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
)

// Error is a failed Push: the reason to report, and whether only a new spec (or a new commit
// on the branch) can fix it.
type Error struct {
	Reason   string
	Terminal bool
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Result is the error for the reconciler to return: Err, marked terminal when it is.
func (e *Error) Result() error {
	if e.Terminal {
		return reconcile.TerminalError(e.Err)
	}
	return e.Err
}

func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

func verificationFailed(format string, args ...any) error {
	return &Error{Reason: generatorv1.VerificationFailedReason, Terminal: true, Err: fmt.Errorf(format, args...)}
}

// changeFailed marks an error of the updaters, generators or files: terminal for errors of the
// content or the request, retried for failing commands.
func changeFailed(err error) error {
	if _, ok := asError(err); ok {
		return err
	}
	var ce *fluxyaml.CommandError
	terminal := !errors.As(err, &ce)
	return &Error{Reason: generatorv1.ReconciliationFailedReason, Terminal: terminal, Err: err}
}
