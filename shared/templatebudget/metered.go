package templatebudget

import (
	"reflect"
	"text/template"
	"unsafe"
)

// FuncMap returns the functions of one execution: every function of f.Map metered by b, and the
// functions of the commands Guard adds. A metered function stops once the context is done, and
// its result is checked against MaxValueSize and counted in Limits.ResultsSize, unless it is one
// of its arguments. Functions the caller binds itself (the current input of a ResourceSet) are
// added to the map it returns.
func (b *Budget) FuncMap(f *Funcs) template.FuncMap {
	fm := make(template.FuncMap, len(f.Map)+4)
	for name, fn := range f.Map {
		serializer := f.serializer(name)
		if m, ok := b.fastMeter(fn, serializer, f.Accessors[name]); ok {
			fm[name] = m
		} else {
			fm[name] = b.meter(reflect.ValueOf(fn), serializer, f.Accessors[name])
		}
	}
	fm[rangeFunc] = b.iterations
	fm[templateFunc] = b.call
	fm[outputFunc] = b.output
	return fm
}

// meter wraps one function. Errors are raised as panics: text/template reports a function's
// panic as the error of the call ("error calling repeat: ..."), also for functions that have
// no error result.
func (b *Budget) meter(fn reflect.Value, serializer, accessor bool) any {
	typ := fn.Type()
	variadic := typ.IsVariadic()
	return reflect.MakeFunc(typ, func(args []reflect.Value) []reflect.Value {
		if err := b.Alive(); err != nil {
			panic(err)
		}
		if serializer {
			if err := argumentsSize(args, variadic); err != nil {
				panic(err)
			}
		}
		var out []reflect.Value
		if variadic {
			out = fn.CallSlice(args)
		} else {
			out = fn.Call(args)
		}
		if accessor || (len(out) == 2 && !out[1].IsNil()) || isArgument(out[0], args, variadic) {
			return out
		}
		if err := b.result(out[0].Interface()); err != nil {
			panic(err)
		}
		return out
	}).Interface()
}

// output checks a value an action prints: fmt builds the whole text before the limited writer
// sees it.
func (b *Budget) output(v any) (any, error) {
	_, err := b.value(v, "the printed value")
	return v, err
}

var errArguments = overLimit("the arguments are over the limit of %s per value", SizeString(MaxValueSize))

// argumentsSize checks the arguments of a serializer, together, against MaxValueSize.
func argumentsSize(args []reflect.Value, variadic bool) error {
	s := sizer{limit: MaxValueSize}
	within := true
	for i, a := range args {
		if variadic && i == len(args)-1 {
			for j := 0; within && j < a.Len(); j++ {
				within = s.walkValue(a.Index(j), 0)
			}
		} else if within {
			within = s.walkValue(a, 0)
		}
	}
	if !within {
		return errArguments
	}
	return nil
}

// isArgument reports whether a result is one of the arguments itself (set returns its map,
// default one of its values).
func isArgument(out reflect.Value, args []reflect.Value, variadic bool) bool {
	for i, a := range args {
		if variadic && i == len(args)-1 {
			for j := range a.Len() {
				if same(out, a.Index(j)) {
					return true
				}
			}
		} else if same(out, a) {
			return true
		}
	}
	return false
}

// same reports whether two values are the same map, slice or string in memory.
func same(a, b reflect.Value) bool {
	for a.Kind() == reflect.Interface && !a.IsNil() {
		a = a.Elem()
	}
	for b.Kind() == reflect.Interface && !b.IsNil() {
		b = b.Elem()
	}
	if !a.IsValid() || !b.IsValid() || a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Map, reflect.Pointer:
		return a.UnsafePointer() == b.UnsafePointer()
	case reflect.Slice:
		return a.Len() == b.Len() && a.UnsafePointer() == b.UnsafePointer()
	case reflect.String:
		return a.Len() == b.Len() && unsafe.StringData(a.String()) == unsafe.StringData(b.String())
	}
	return false
}
