package builder

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// resourcesOf turns a YAML list of object templates into the JSON documents
// the API server stores in spec.resources.
func resourcesOf(t testing.TB, list string) [][]byte {
	t.Helper()
	if strings.TrimSpace(list) == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(list))
	if err != nil {
		t.Fatalf("resources fixture: %v", err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(j, &items); err != nil {
		t.Fatalf("resources fixture is not a list: %v", err)
	}
	out := make([][]byte, len(items))
	for i, item := range items {
		out[i] = item
	}
	return out
}

// inputsOf decodes a YAML list of input sets the way the controller reads
// spec.inputs: plain encoding/json, so numbers arrive as float64.
func inputsOf(t *testing.T, list string) []Input {
	t.Helper()
	if strings.TrimSpace(list) == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(list))
	if err != nil {
		t.Fatalf("inputs fixture: %v", err)
	}
	var inputs []Input
	if err := json.Unmarshal(j, &inputs); err != nil {
		t.Fatalf("inputs fixture is not a list of maps: %v", err)
	}
	return inputs
}

// objectsOf decodes the expected objects, a multi-document YAML string, into
// the exact Go values unstructured objects hold (int64 for integers).
func objectsOf(t *testing.T, docs string) []map[string]any {
	t.Helper()
	out := []map[string]any{}
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("expected objects fixture: %v", err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(j, &obj); err != nil {
			t.Fatalf("expected objects fixture: %v", err)
		}
		out = append(out, obj)
	}
	return out
}

// contents returns the object maps for comparison with objectsOf.
func contents(objects []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objects))
	for i, o := range objects {
		out[i] = o.Object
	}
	return out
}
