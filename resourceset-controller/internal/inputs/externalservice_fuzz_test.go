package inputs

import (
	"reflect"
	"regexp"
	"testing"
)

// FuzzExternalServiceResponse decodes fuzzed bodies of an ExternalService response. Accepted
// inputs each have a non-empty string id, unique in the response, hold only the value types
// templates and unstructured objects take (whole numbers as int64), and survive the round
// trip through the API's JSON values (status.exportedInputs) unchanged. A refused body gets
// one of a few fixed messages, which quote nothing of it.
func FuzzExternalServiceResponse(f *testing.F) {
	for _, s := range []string{
		`{"inputs": [
			{"id": "pr-1", "branch": "feat/a", "replicas": 2, "meta": {"labels": ["x", "y"], "weight": 0.5}},
			{"id": "pr-2", "branch": "feat/b", "replicas": 1}
		]}`,
		`{"inputs": []}`,
		`{"items": []}`,
		`{"inputs": [{"id": "a"}, {"id": "b"}, {"id": "a"}]}`,
		`{"inputs": [{"id": "a"}, {"name": "no id"}]}`,
		`{"inputs": [{"id": ""}]}`,
		`{"inputs": [{"id": 7}]}`,
		`{"inputs": [{"id": "a"}, "b"]}`,
		`<html>maintenance</html>`,
		`{"inputs": []} {"inputs": []}`,
		`{"inputs": null}`,
		`{"inputs": [{"id": "n", "big": 9223372036854775808, "neg": -9223372036854775808, "e": 1e3, "f": 1.5, "huge": 1e400}]}`,
		`{"inputs": [{"id": "u", "s": "\u00e9\ud800", "nested": [[{"a": null}], true, -0, 0.0]}], "extra": {}}`,
		`{"Inputs": [{"id": "case"}]}`,
		`{"inputs": [{"id": "dup", "id": "dup2"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 8192 {
			return
		}
		inputs, err := parseServiceResponse(body)
		if err != nil {
			if !responseErrors.MatchString(err.Error()) {
				t.Fatalf("an error that is not one of the fixed messages: %q", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, in := range inputs {
			id, ok := in[IDKey].(string)
			if !ok || id == "" || seen[id] {
				t.Fatalf("input %d has the id %#v (seen before: %t)", i, in[IDKey], seen[id])
			}
			seen[id] = true
			checkInputValue(t, in)
		}
		api, err := ToAPI(inputs)
		if err != nil {
			t.Fatalf("the inputs do not encode: %v", err)
		}
		back, err := FromAPI(api)
		if err != nil {
			t.Fatalf("the encoded inputs do not decode: %v", err)
		}
		if !reflect.DeepEqual(back, inputs) {
			t.Fatalf("the inputs change through the API: %#v, were %#v", back, inputs)
		}
	})
}

// responseErrors are the messages of a refused response: only numbers vary.
var responseErrors = regexp.MustCompile(`^(the response is not a JSON object \{"inputs": \[\.\.\.\]\}|unexpected data after the JSON response|` +
	`the response has no "inputs" list|input \d+ holds a number out of range|input \d+ is not a JSON object|` +
	`input \d+ has no "id": every input needs a non-empty string id|inputs \d+ and \d+ have the same id: ids must be unique)$`)

// checkInputValue fails on a value of a type inputs must not hold.
func checkInputValue(t *testing.T, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil, string, bool, int64, float64:
	case map[string]any:
		for _, e := range v {
			checkInputValue(t, e)
		}
	case []any:
		for _, e := range v {
			checkInputValue(t, e)
		}
	default:
		t.Fatalf("a value of type %T", v)
	}
}
