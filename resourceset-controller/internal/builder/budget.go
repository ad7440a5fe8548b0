package builder

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
)

// budget is what one Build has spent of its limits (limits.go). text/template cannot be
// interrupted, so the build looks at its context wherever it gets control back: between inputs
// and entries, at every write of output, every function call, every loop iteration and every
// template call. A Build runs on one goroutine, so the counters need no lock.
type budget struct {
	ctx      context.Context
	rendered int64 // bytes of output and copied static parts
	results  int64 // bytes of the values functions returned
	iterated int64 // loop iterations
	calls    int   // template calls
}

func newBudget(ctx context.Context) *budget {
	return &budget{ctx: ctx}
}

// alive returns the context's error, wrapped, once the build must stop.
func (b *budget) alive() error {
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("build interrupted: %w", err)
	}
	return nil
}

// render counts n bytes of output before they are written or copied.
func (b *budget) render(n int64) error {
	if err := b.alive(); err != nil {
		return err
	}
	b.rendered += n
	if b.rendered > MaxRenderedSize {
		return fmt.Errorf("the rendered output is over the limit of %s per build", sizeString(MaxRenderedSize))
	}
	return nil
}

// call counts one template call (guard.go).
func (b *budget) call() (string, error) {
	if err := b.alive(); err != nil {
		return "", err
	}
	b.calls++
	if b.calls > MaxTemplateCalls {
		return "", fmt.Errorf("a template call takes the build over the limit of %d template calls", MaxTemplateCalls)
	}
	return "", nil
}

// iterations counts the iterations of a loop over v before it starts (guard.go) and returns v.
func (b *budget) iterations(v any) (any, error) {
	if err := b.alive(); err != nil {
		return nil, err
	}
	n := int64(1) // an iterator function: its own calls are metered
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Invalid:
		n = 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = max(rv.Int(), 0)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n = int64(min(rv.Uint(), MaxIterations+1))
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Chan:
		n = int64(rv.Len())
	}
	b.iterated += n
	if b.iterated > MaxIterations {
		return nil, fmt.Errorf("a loop of %d iterations takes the build over the limit of %d loop iterations", n, MaxIterations)
	}
	return v, nil
}

// value checks the size of a value against MaxValueSize and returns it.
func (b *budget) value(v any, what string) (int64, error) {
	size := sizeOf(v, MaxValueSize)
	if size > MaxValueSize {
		return size, overValueSize(what)
	}
	return size, nil
}

func overValueSize(what string) error {
	return fmt.Errorf("%s is over the limit of %s per value", what, sizeString(MaxValueSize))
}

// result checks a value a function returned and counts it.
func (b *budget) result(v any) error {
	size, err := b.value(v, "the result")
	if err != nil {
		return err
	}
	return b.resultSize(size)
}

// resultSize counts size bytes of results, checked against MaxValueSize by the caller.
func (b *budget) resultSize(size int64) error {
	b.results += size
	if b.results > MaxResultsSize {
		return fmt.Errorf("the results of template functions are over the limit of %s per build", sizeString(MaxResultsSize))
	}
	return nil
}

// limitedWriter is where templates write: it counts every write before the buffer grows, so
// memory stops at the limit rather than after it, and it refuses to write after the deadline.
type limitedWriter struct {
	buf    *bytes.Buffer
	budget *budget
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if err := w.budget.render(int64(len(p))); err != nil {
		return 0, err
	}
	return w.buf.Write(p)
}
