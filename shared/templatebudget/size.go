package templatebudget

import "reflect"

// SizeOf estimates what a template value weighs once printed or serialized: the bytes of its
// strings, plus 8 bytes for each scalar and each list item or map entry, plus 2 bytes for each
// level of nesting above an item or entry (the indentation toYaml and toPrettyJson give it).
// Shared parts count each time they are reached, as they are printed each time. The walk stops
// as soon as the size is over limit (a map made to hold itself with set is endlessly large), so
// a check costs at most the limit.
func SizeOf(v any, limit int64) int64 {
	s := sizer{limit: limit}
	s.walk(v, 0)
	return s.total
}

type sizer struct{ total, limit int64 }

// add counts n bytes and reports whether the total is still within the limit.
func (s *sizer) add(n int) bool {
	s.total += int64(n)
	return s.total <= s.limit
}

// walk has fast paths for the types of inputs and of most slim-sprig results.
func (s *sizer) walk(v any, depth int) bool {
	switch v := v.(type) {
	case string:
		return s.add(len(v))
	case nil, bool, int, int64, float64:
		return s.add(8)
	case []any:
		for _, e := range v {
			if !s.add(8+2*depth) || !s.walk(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if !s.add(8+2*depth+len(k)) || !s.walk(e, depth+1) {
				return false
			}
		}
		return true
	}
	return s.walkValue(reflect.ValueOf(v), depth)
}

func (s *sizer) walkValue(v reflect.Value, depth int) bool {
	switch v.Kind() {
	case reflect.String:
		return s.add(v.Len())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return s.add(v.Len())
		}
		for i := range v.Len() {
			if !s.add(8+2*depth) || !s.walkValue(v.Index(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if !s.add(8+2*depth) || !s.walkValue(it.Key(), depth+1) || !s.walkValue(it.Value(), depth+1) {
				return false
			}
		}
		return true
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return s.add(8)
		}
		return s.walkValue(v.Elem(), depth)
	case reflect.Struct:
		for i := range v.NumField() {
			if !s.add(8+2*depth) || !s.walkValue(v.Field(i), depth+1) {
				return false
			}
		}
		return true
	}
	return s.add(8)
}
