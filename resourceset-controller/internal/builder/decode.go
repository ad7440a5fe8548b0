package builder

import (
	"math"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// decodeYAML reads one YAML value into the types unstructured.Unstructured
// accepts (map[string]any, []any, string, int64, float64, bool, nil).
// Going through JSON gives string keys and JSON-compatible scalars; the
// apimachinery decoder and normalizeNumbers keep whole numbers as int64, which
// the API machinery expects for integer fields (a float64 2 would fail
// conversion of replicas and similar fields).
func decodeYAML(data []byte) (any, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

// decodeJSON is decodeYAML for the JSON documents of spec.resources.
func decodeJSON(data []byte) (any, error) {
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

// normalizeNumbers turns whole float64 values (1e3, 2.0) into int64, in place.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v)
		}
	}
	return v
}

// decodeValue reads the output of a typed template string. Most outputs are
// a name, a number or a quoted string; a YAML parse costs microseconds and
// dozens of allocations, so those are recognised directly. Anything else, and
// anything YAML could read differently, goes to decodeYAML; a test checks that
// both agree.
func decodeValue(s string) (any, error) {
	if v, ok := decodeSimple(s); ok {
		return v, nil
	}
	return decodeYAML([]byte(s))
}

// decodeSimple decodes s when it is one of the unambiguous YAML scalars:
//   - "" (null), "true", "false";
//   - a decimal integer without sign tricks or leading zeros that fits int64;
//   - a double-quoted string of printable ASCII without escapes (| quote);
//   - a plain word of [A-Za-z0-9._/-] starting with a letter that is not one
//     of the YAML 1.1 boolean or null words (yes, on, n, Null...).
func decodeSimple(s string) (any, bool) {
	switch s {
	case "":
		return nil, true
	case "true":
		return true, true
	case "false":
		return false, true
	}
	switch c := s[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return decodeDecimal(s)
	case c == '"':
		return decodeQuoted(s)
	case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		return decodeWord(s)
	}
	return nil, false
}

func decodeDecimal(s string) (any, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(digits) > 1) {
		return nil, false // "-" or octal-looking "007"
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, false // out of range: YAML makes it a float
	}
	return n, true
}

func decodeQuoted(s string) (any, bool) {
	if len(s) < 2 || s[len(s)-1] != '"' {
		return nil, false
	}
	inner := s[1 : len(s)-1]
	for i := 0; i < len(inner); i++ {
		if c := inner[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return nil, false
		}
	}
	return inner, true
}

func decodeWord(s string) (any, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '.' || c == '_' || c == '/' || c == '-') {
			return nil, false
		}
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
		return nil, false // YAML 1.1 booleans and null in any case mix: let YAML decide
	}
	return s, true
}
