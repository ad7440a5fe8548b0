package builder

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// toObject checks that a rendered value is a Kubernetes object the rest of
// the pipeline can rely on (identity fields set, string labels/annotations)
// and wraps it. Catching this here names the entry and input; the API server
// would only say that some object of the set is invalid.
func toObject(v any) (*unstructured.Unstructured, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a Kubernetes object: rendered %s, want a map with apiVersion, kind and metadata.name", describe(v))
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if err := requireString(obj, f, f); err != nil {
			return nil, err
		}
	}
	raw, ok := obj["metadata"]
	if !ok || raw == nil {
		return nil, fmt.Errorf("not a Kubernetes object: metadata.name is missing")
	}
	meta, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a Kubernetes object: metadata is %s, want a map", describe(raw))
	}
	if err := requireString(meta, "name", "metadata.name"); err != nil {
		return nil, err
	}
	if ns, ok := meta["namespace"]; ok && ns != nil {
		if _, ok := ns.(string); !ok {
			return nil, fmt.Errorf("metadata.namespace is %s, want a string", describe(ns))
		}
	}
	for _, f := range []string{"labels", "annotations"} {
		if err := checkStringMap(meta, f); err != nil {
			return nil, err
		}
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

func requireString(m map[string]any, key, path string) error {
	v, ok := m[key]
	if !ok || v == nil || v == "" {
		return fmt.Errorf("not a Kubernetes object: %s is missing", path)
	}
	if _, ok := v.(string); !ok {
		return fmt.Errorf("not a Kubernetes object: %s is %s, want a string", path, describe(v))
	}
	return nil
}

// checkStringMap rejects non-string label and annotation values, the classic
// mistake of templating a number or a boolean without | quote.
func checkStringMap(meta map[string]any, key string) error {
	raw, ok := meta[key]
	if !ok || raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("metadata.%s is %s, want a map of strings", key, describe(raw))
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("metadata.%s[%q] is %s, want a string (use | quote)", key, k, describe(v))
		}
	}
	return nil
}

// describe names the JSON type of a value for error messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("a string %q", truncate(v))
	case bool:
		return fmt.Sprintf("a boolean %v", v)
	case int64, float64:
		return fmt.Sprintf("a number %v", v)
	}
	return fmt.Sprintf("a %T", v)
}
