package templatebudget

import "fmt"

const (
	// MaxValueSize bounds one value a template function returns or an action prints, as SizeOf
	// counts it, and the values a function serializes (print, printf, toJson, join...): more
	// than twice the largest object the API server stores, so no value an object can hold is
	// refused.
	MaxValueSize = 4 << 20

	// MaxWidth bounds the padding a function adds (the widths and precisions of printf): no
	// column is that wide.
	MaxWidth = 10_000
)

// Limits are the limits of one execution of a template set, or of several executed with one
// Budget (the inputs of a ResourceSet build).
type Limits struct {
	// Unit names what the limits apply to in errors: "build" gives "over the limit of 64 MiB per
	// build".
	Unit string

	// RenderedSize bounds what the templates write, summed.
	RenderedSize int64

	// ResultsSize bounds the values the template functions return, summed (a function that
	// returns one of its arguments adds nothing): a loop cannot pile up copies of MaxValueSize
	// values.
	ResultsSize int64

	// Iterations bounds the loop iterations (range), counted when each loop starts: nested
	// loops otherwise multiply without bound.
	Iterations int64

	// TemplateCalls bounds the template calls (template, block): a template calling itself
	// twice doubles the work at each level.
	TemplateCalls int
}

// LimitError is the error of a template over one of its limits; its message names the limit.
// text/template wraps it ("error calling range: ..."), errors.As finds it.
type LimitError struct{ msg string }

func (e *LimitError) Error() string { return e.msg }

func overLimit(format string, args ...any) error {
	return &LimitError{msg: fmt.Sprintf(format, args...)}
}

// ResultOverLimit is the error of a function whose result would be size bytes, over
// MaxValueSize: functions check it before they allocate.
func ResultOverLimit(size int) error {
	return overLimit("a result of %d bytes is over the limit of %s per value", size, SizeString(MaxValueSize))
}

// SizeString says a byte limit the way the docs do: 4 MiB.
func SizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
