package inputs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// FromAPI decodes the API's inputs into plain maps. Whole numbers become int64 and the others
// float64: encoding/json would make every number a float64, which templates print as 1e+06 and
// which unstructured objects cannot carry as integers.
func FromAPI(in []rsv1.ResourceSetInput) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(in))
	for i, input := range in {
		m := make(map[string]any, len(input))
		for k, v := range input {
			if v == nil || len(v.Raw) == 0 {
				m[k] = nil
				continue
			}
			val, err := decodeJSON(v.Raw)
			if err != nil {
				return nil, fmt.Errorf("input %d: value of %q: %w", i, k, err)
			}
			m[k] = val
		}
		out = append(out, m)
	}
	return out, nil
}

// ToAPI encodes plain inputs as the API's JSON values, e.g. for a provider's
// status.exportedInputs.
func ToAPI(in []map[string]any) ([]rsv1.ResourceSetInput, error) {
	out := make([]rsv1.ResourceSetInput, 0, len(in))
	for i, input := range in {
		m := make(rsv1.ResourceSetInput, len(input))
		for k, v := range input {
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("input %d: value of %q: %w", i, k, err)
			}
			m[k] = &apiextensionsv1.JSON{Raw: raw}
		}
		out = append(out, m)
	}
	return out, nil
}

// decodeJSON decodes one JSON document with numbers converted by normalizeNumbers. Trailing
// data is an error, so a value is never silently truncated.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return normalizeNumbers(v)
}

// normalizeNumbers replaces the json.Numbers of a decoded value, in place for maps and slices.
func normalizeNumbers(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		return number(t)
	case map[string]any:
		for k, e := range t {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
		return t, nil
	case []any:
		for i, e := range t {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
		return t, nil
	default:
		return v, nil
	}
}

// number is an int64 when n is a whole number within int64's range (also when written as 1.0
// or 1e3), else a float64.
func number(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", n, err)
	}
	// -2^63 and 2^63 are exact as float64; 2^63 itself is outside int64.
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}
