package templatebudget

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
)

// Budget is what one execution has spent of its limits. text/template cannot be interrupted, so
// the budget looks at its context wherever it gets control back: at every write of output, every
// function call, every loop start and every template call. A Budget is used by one goroutine,
// so the counters need no lock.
type Budget struct {
	ctx      context.Context
	limits   Limits
	rendered int64 // bytes of output and of what the caller copies (Render)
	results  int64 // bytes of the values functions returned
	iterated int64 // loop iterations
	calls    int   // template calls
}

// New returns the budget of one execution, which stops soon after ctx is done.
func New(ctx context.Context, limits Limits) *Budget {
	return &Budget{ctx: ctx, limits: limits}
}

// Alive returns the context's error, wrapped, once the execution must stop.
func (b *Budget) Alive() error {
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("%s interrupted: %w", b.limits.Unit, err)
	}
	return nil
}

// Render counts n bytes of output before they are written or copied.
func (b *Budget) Render(n int64) error {
	if err := b.Alive(); err != nil {
		return err
	}
	b.rendered += n
	if b.rendered > b.limits.RenderedSize {
		return overLimit("the rendered output is over the limit of %s per %s", SizeString(b.limits.RenderedSize), b.limits.Unit)
	}
	return nil
}

// call counts one template call (guard.go).
func (b *Budget) call() (string, error) {
	if err := b.Alive(); err != nil {
		return "", err
	}
	b.calls++
	if b.calls > b.limits.TemplateCalls {
		return "", overLimit("a template call takes the %s over the limit of %d template calls", b.limits.Unit, b.limits.TemplateCalls)
	}
	return "", nil
}

// iterations counts the iterations of a loop over v before it starts (guard.go) and returns v.
func (b *Budget) iterations(v any) (any, error) {
	if err := b.Alive(); err != nil {
		return nil, err
	}
	n := int64(1) // an iterator function: its own calls are metered
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Invalid:
		n = 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = max(rv.Int(), 0)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n = int64(min(rv.Uint(), uint64(b.limits.Iterations)+1))
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Chan:
		n = int64(rv.Len())
	}
	b.iterated += n
	if b.iterated > b.limits.Iterations {
		return nil, overLimit("a loop of %d iterations takes the %s over the limit of %d loop iterations", n, b.limits.Unit, b.limits.Iterations)
	}
	return v, nil
}

// value checks the size of a value against MaxValueSize and returns it.
func (b *Budget) value(v any, what string) (int64, error) {
	size := SizeOf(v, MaxValueSize)
	if size > MaxValueSize {
		return size, overValueSize(what)
	}
	return size, nil
}

func overValueSize(what string) error {
	return overLimit("%s is over the limit of %s per value", what, SizeString(MaxValueSize))
}

// result checks a value a function returned and counts it.
func (b *Budget) result(v any) error {
	size, err := b.value(v, "the result")
	if err != nil {
		return err
	}
	return b.resultSize(size)
}

// resultSize counts size bytes of results, checked against MaxValueSize by the caller.
func (b *Budget) resultSize(size int64) error {
	b.results += size
	if b.results > b.limits.ResultsSize {
		return overLimit("the results of template functions are over the limit of %s per %s", SizeString(b.limits.ResultsSize), b.limits.Unit)
	}
	return nil
}

// Writer returns where templates write into buf: it counts every write before the buffer
// grows, so memory stops at the limit rather than after it, and it refuses to write once the
// context is done.
func (b *Budget) Writer(buf *bytes.Buffer) io.Writer {
	return &limitedWriter{buf: buf, budget: b}
}

type limitedWriter struct {
	buf    *bytes.Buffer
	budget *Budget
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if err := w.budget.Render(int64(len(p))); err != nil {
		return 0, err
	}
	return w.buf.Write(p)
}
