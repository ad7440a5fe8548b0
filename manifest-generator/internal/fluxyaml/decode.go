package fluxyaml

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// decoded is one object found in a YAML or JSON stream.
type decoded struct {
	obj   *unstructured.Unstructured
	index int // document, counted from 0
	item  int // position in a List's items, -1 when not from a List
}

// docError says which document of a stream is unusable.
type docError struct {
	index, item int
	syntax      bool
	reason      string
}

func (e *docError) Error() string {
	return fmt.Sprintf("%s: %s", docPosition(e.index, e.item), e.reason)
}

// docPosition names a document for people, who count from 1.
func docPosition(index, item int) string {
	if item >= 0 {
		return fmt.Sprintf("document %d, item %d", index+1, item+1)
	}
	return fmt.Sprintf("document %d", index+1)
}

// decodeObjects splits a multi-document YAML stream (or a stream of JSON
// objects), skips empty documents and expands Lists. Generator output is
// decoded strictly: every document must be a Kubernetes object. Raw files
// are decoded leniently, skipping documents that are not Kubernetes objects
// at all (no apiVersion or kind, or not a mapping), as Flux v1 did, and
// kustomize's own config files. Duplicate keys are an error in an object:
// the plain YAML decoders would silently keep the last one.
func decodeObjects(data []byte, lenient bool) ([]decoded, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, err
	}
	var out []decoded
	for index, raw := range docs {
		if raw.err != nil && !lenient {
			return nil, &docError{index: index, item: -1, syntax: true, reason: raw.err.Error()}
		}
		js := bytes.TrimSpace(raw.json)
		if len(js) == 0 || string(js) == "null" {
			continue
		}
		// sigs.k8s.io/json keeps integers as int64, as unstructured
		// expects, and reports duplicate fields of JSON input.
		var v any
		strictErrs, err := kjson.UnmarshalStrict(js, &v)
		if err != nil {
			return nil, &docError{index: index, item: -1, syntax: true, reason: err.Error()}
		}
		m, ok := v.(map[string]any)
		if !ok {
			if lenient {
				continue
			}
			return nil, &docError{index: index, item: -1, reason: fmt.Sprintf("%s, not a mapping", describeValue(v))}
		}
		if lenient && !looksLikeObject(m) {
			continue
		}
		if raw.err != nil {
			return nil, &docError{index: index, item: -1, syntax: true, reason: raw.err.Error()}
		}
		if len(strictErrs) > 0 {
			return nil, &docError{index: index, item: -1, syntax: true, reason: strictErrs[0].Error()}
		}
		objs, err := expand(m, index)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// document is one document of a stream as JSON. err is set when the
// document is valid YAML only with duplicate keys (json then holds the
// lenient conversion).
type document struct {
	json []byte
	err  error
}

// splitDocuments cuts data into documents: a stream of JSON values when it
// starts like JSON and decodes as such, otherwise YAML documents split by
// apimachinery's YAMLReader (the splitter behind its YAMLOrJSONDecoder).
func splitDocuments(data []byte) ([]document, error) {
	if utilyaml.IsJSONBuffer(data) {
		if docs, err := splitJSON(data); err == nil {
			return docs, nil
		}
		// Not JSON after all: a YAML flow mapping also starts with "{".
	}
	var docs []document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for index := 0; ; index++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, &docError{index: index, item: -1, syntax: true, reason: err.Error()}
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err == nil {
			docs = append(docs, document{json: js})
			continue
		}
		lenientJS, lerr := yaml.YAMLToJSON(doc)
		if lerr != nil {
			return nil, &docError{index: index, item: -1, syntax: true, reason: oneLine(lerr)}
		}
		docs = append(docs, document{json: lenientJS, err: errors.New(oneLine(err))})
	}
}

func splitJSON(data []byte) ([]document, error) {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, document{json: raw})
	}
}

// oneLine joins yaml.v2's multi-line errors.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// looksLikeObject tells Kubernetes objects from other YAML in a raw tree
// (Helm values, CI files, kustomization.yaml, which is build input).
func looksLikeObject(m map[string]any) bool {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		return false
	}
	return schema.FromAPIVersionAndKind(apiVersion, kind).Group != "kustomize.config.k8s.io"
}

// expand returns the object, or the items of a List, checking each.
func expand(m map[string]any, index int) ([]decoded, error) {
	u := &unstructured.Unstructured{Object: m}
	if !isList(u) {
		if reason := checkObject(u); reason != "" {
			return nil, &docError{index: index, item: -1, reason: reason}
		}
		return []decoded{{obj: u, index: index, item: -1}}, nil
	}
	items, _ := m["items"].([]any)
	out := make([]decoded, 0, len(items))
	for j, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			return nil, &docError{index: index, item: j, reason: fmt.Sprintf("%s, not a mapping", describeValue(it))}
		}
		item := &unstructured.Unstructured{Object: im}
		if isList(item) {
			return nil, &docError{index: index, item: j, reason: "a List inside a List"}
		}
		if reason := checkObject(item); reason != "" {
			return nil, &docError{index: index, item: j, reason: reason}
		}
		out = append(out, decoded{obj: item, index: index, item: j})
	}
	return out, nil
}

// isList follows kubectl: kind List, or any *List kind carrying items.
func isList(u *unstructured.Unstructured) bool {
	kind := u.GetKind()
	if kind == "List" {
		return true
	}
	_, hasItems := u.Object["items"].([]any)
	return strings.HasSuffix(kind, "List") && hasItems
}

// checkObject returns why u cannot be applied, or "".
func checkObject(u *unstructured.Unstructured) string {
	var missing []string
	apiVersion, _ := u.Object["apiVersion"].(string)
	if apiVersion == "" {
		missing = append(missing, "apiVersion")
	} else if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		return fmt.Sprintf("invalid apiVersion %q", apiVersion)
	}
	if s, _ := u.Object["kind"].(string); s == "" {
		missing = append(missing, "kind")
	}
	if name, _, _ := unstructured.NestedString(u.Object, "metadata", "name"); name == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return "missing " + strings.Join(missing, ", ")
	}
	return ""
}

func describeValue(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []any:
		return "a sequence"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// objectKey identifies an object the way the API server does; two objects
// with the same key would overwrite each other when applied.
func objectKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return gvk.Group + "|" + gvk.Kind + "|" + u.GetNamespace() + "|" + u.GetName()
}

// objectName formats an object like Flux's ssa package does
// (Kind/namespace/name), with the group when it is not the core group.
func objectName(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	if ns := u.GetNamespace(); ns != "" {
		return kind + "/" + ns + "/" + u.GetName()
	}
	return kind + "/" + u.GetName()
}
