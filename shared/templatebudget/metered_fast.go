package templatebudget

import "unsafe"

// fastMeter meters the functions of the most used signatures with plain closures: text/template
// calls a function through reflection, and one made with reflect.MakeFunc costs a second
// reflective call (a third more CPU for a whole build). The checks are meter's.
func (b *Budget) fastMeter(fn any, serializer, accessor bool) (any, bool) {
	switch f := fn.(type) {
	case func(string) string:
		return func(s string) string { b.enter(); return b.leaveString(f(s), s) }, true
	case func(string, string) string:
		return func(a, s string) string { b.enter(); return b.leaveString(f(a, s), a, s) }, true
	case func(...any) string:
		return func(args ...any) string { b.enterWith(serializer, args...); return b.leaveString(f(args...)) }, true
	case func(any) string:
		return func(v any) string { b.enterWith(serializer, v); return b.leaveString(f(v)) }, true
	case func(any) (string, error):
		return func(v any) (string, error) {
			b.enterWith(serializer, v)
			out, err := f(v)
			if err != nil {
				return "", err
			}
			return b.leaveString(out), nil
		}, true
	case func(int, string) (string, error):
		return func(n int, s string) (string, error) {
			b.enter()
			out, err := f(n, s)
			if err != nil {
				return "", err
			}
			return b.leaveString(out, s), nil
		}, true
	case func(string, string, string) (string, error):
		return func(x, y, s string) (string, error) {
			b.enter()
			out, err := f(x, y, s)
			if err != nil {
				return "", err
			}
			return b.leaveString(out, x, y, s), nil
		}, true
	case func(string, ...any) (string, error): // printf
		return func(format string, args ...any) (string, error) {
			b.enterWith(serializer, args...)
			out, err := f(format, args...)
			if err != nil {
				return "", err
			}
			return b.leaveString(out, format), nil
		}, true
	case func(any, ...any) any: // default, an accessor
		if !accessor {
			return nil, false
		}
		return func(v any, given ...any) any { b.enter(); return f(v, given...) }, true
	case func(string, string) bool:
		return scalar2(b, f), true
	case func(any) bool:
		return scalar1(b, f), true
	case func(any) (bool, error):
		return func(v any) (bool, error) { b.enter(); return f(v) }, true
	case func(any) int:
		return scalar1(b, f), true
	case func(any) int64:
		return scalar1(b, f), true
	case func(any) float64:
		return scalar1(b, f), true
	}
	return nil, false
}

// scalar1 and scalar2 meter functions returning a number or a boolean: nothing to count.
func scalar1[A any, R bool | int | int64 | float64](b *Budget, f func(A) R) func(A) R {
	return func(a A) R { b.enter(); return f(a) }
}

func scalar2[A, B any, R bool | int | int64 | float64](b *Budget, f func(A, B) R) func(A, B) R {
	return func(a A, c B) R { b.enter(); return f(a, c) }
}

// enter stops a function once the build's context is done.
func (b *Budget) enter() {
	if err := b.Alive(); err != nil {
		panic(err)
	}
}

// enterWith also checks the arguments of a serializer.
func (b *Budget) enterWith(serializer bool, args ...any) {
	b.enter()
	if !serializer {
		return
	}
	s := sizer{limit: MaxValueSize}
	for _, a := range args {
		if !s.walk(a, 0) {
			panic(errArguments)
		}
	}
}

// leaveString checks and counts a string result, unless it is one of the string arguments.
func (b *Budget) leaveString(out string, args ...string) string {
	for _, a := range args {
		if len(a) == len(out) && unsafe.StringData(a) == unsafe.StringData(out) {
			return out
		}
	}
	if len(out) > MaxValueSize {
		panic(overValueSize("the result"))
	}
	if err := b.resultSize(int64(len(out))); err != nil {
		panic(err)
	}
	return out
}
