package builder

import (
	"context"
	"errors"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

// InputError is the failure of the templates for one input (Index, in the order of the inputs):
// a template error or output that is not an object. The limits of the whole build (its budget,
// its deadline) are not an input's failure.
type InputError struct {
	Index int
	Err   error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// inputError is err as the failure of input i, unless a limit of the whole build stopped it.
func inputError(i int, err error) error {
	var limit *templatebudget.LimitError
	if errors.As(err, &limit) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &InputError{Index: i, Err: err}
}

// AsInputError is the failure of one input that err is, if it is one.
func AsInputError(err error) (*InputError, bool) {
	var ie *InputError
	ok := errors.As(err, &ie)
	return ie, ok
}
