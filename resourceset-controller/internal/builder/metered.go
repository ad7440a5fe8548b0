package builder

import (
	"fmt"
	"reflect"
	"text/template"
	"unsafe"
)

// accessors return one of their arguments or a part of one: they make nothing new, so their
// results are neither checked nor counted (a get on a large input is no cost).
var accessors = map[string]bool{
	"default": true, "coalesce": true, "ternary": true, "get": true, "dig": true,
	"first": true, "mustFirst": true, "last": true, "mustLast": true,
}

// serializers print or encode their arguments, so their cost follows what the arguments hold,
// not what they are: a list made of the same map twice prints it twice, a map set to hold
// itself prints forever. Their arguments are checked against MaxValueSize before they run.
var serializers = map[string]bool{
	"toJson": true, "toPrettyJson": true, "toRawJson": true, "mustToJson": true,
	"mustToPrettyJson": true, "mustToRawJson": true, "toYaml": true, "toString": true,
	"toStrings": true, "cat": true, "quote": true, "squote": true, "join": true,
	"sortAlpha": true, "dict": true, "urlJoin": true,
	"print": true, "printf": true, "println": true, "html": true, "js": true, "urlquery": true,
}

// funcMap returns the functions of one build: every function of funcs, metered by b. A
// metered function stops once the build's context is done, and its result is checked against
// MaxValueSize and counted in MaxResultsSize, unless it is one of its arguments.
func (b *budget) funcMap() template.FuncMap {
	fm := make(template.FuncMap, len(funcs)+3)
	for name, fn := range funcs {
		if name == inputsFunc {
			continue
		}
		if f, ok := b.fastMeter(name, fn); ok {
			fm[name] = f
		} else {
			fm[name] = b.meter(name, reflect.ValueOf(fn))
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
func (b *budget) meter(name string, fn reflect.Value) any {
	typ := fn.Type()
	variadic := typ.IsVariadic()
	accessor, serializer := accessors[name], serializers[name]
	return reflect.MakeFunc(typ, func(args []reflect.Value) []reflect.Value {
		if err := b.alive(); err != nil {
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
func (b *budget) output(v any) (any, error) {
	_, err := b.value(v, "the printed value")
	return v, err
}

var errArguments = fmt.Errorf("the arguments are over the limit of %s per value", sizeString(MaxValueSize))

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
