package fluxyaml

import (
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
	// tooLarge is a document over MaxDocumentSize or MaxDocumentNodes, refused unread.
	tooLarge bool
	reason   string
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
//
// The documents are decoded one at a time, and each is checked before it is
// converted (checkDocument: MaxDocumentSize, MaxDocumentNodes), so that what a
// stream holds beyond the objects kept so far is one document's conversion;
// the nodes of the objects kept are counted in budget (nil: no budget), which
// ends the decode with a *LimitError as soon as it is spent.
func decodeObjects(data []byte, lenient bool, budget *nodeBudget) ([]decoded, error) {
	if utilyaml.IsJSONBuffer(data) {
		spent := budget.spent()
		d := &decoder{lenient: lenient, budget: budget}
		if isJSON, err := d.jsonStream(data); isJSON {
			return d.out, err
		}
		// Not JSON after all: a YAML flow mapping also starts with "{".
		budget.reset(spent)
	}
	d := &decoder{lenient: lenient, budget: budget}
	return d.out, d.yamlStream(data)
}

// decoder holds the objects of one stream decoded so far.
type decoder struct {
	lenient bool
	budget  *nodeBudget
	out     []decoded
}

// yamlStream decodes the documents of a YAML stream, in order, converting each to JSON only
// once checkDocument has accepted it.
func (d *decoder) yamlStream(data []byte) error {
	docs := yamlDocuments{data: data}
	for index := 0; ; index++ {
		span, err := docs.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &docError{index: index, item: -1, syntax: true, reason: err.Error()}
		}
		if err := checkDocument(index, span); err != nil {
			return err
		}
		doc := docs.normalize(span)
		js, err := yaml.YAMLToJSONStrict(doc)
		var strictErr error
		if err != nil {
			lenientJS, lerr := yaml.YAMLToJSON(doc)
			if lerr != nil {
				return &docError{index: index, item: -1, syntax: true, reason: oneLine(lerr)}
			}
			// Valid YAML only with duplicate keys: an error in an object, but a raw file's
			// document that is no object is skipped all the same.
			js, strictErr = lenientJS, errors.New(oneLine(err))
		}
		if err := d.document(index, js, strictErr); err != nil {
			return err
		}
	}
}

// jsonStream decodes data as a stream of JSON values. isJSON is false when data is not one
// (a syntax error in any value, as before the stream was decoded document by document), and
// then what was decoded is to be dropped: the stream is YAML. An error in a document is
// returned only once the rest of the stream has been read as JSON, so that YAML is never
// refused for an error it does not have as YAML.
func (d *decoder) jsonStream(data []byte) (isJSON bool, err error) {
	// The decoder reads no further than MaxDocumentSize past the start of the value it
	// decodes: a larger value is refused without being held.
	r := &windowReader{data: data}
	dec := json.NewDecoder(r)
	end := 0
	for index := 0; ; index++ {
		start := end
		for start < len(data) && isJSONSpace(data[start]) {
			start++
		}
		r.grow(start + MaxDocumentSize + 1)
		var v skipValue
		derr := dec.Decode(&v)
		if errors.Is(derr, io.EOF) {
			return true, err
		}
		truncated := r.limit < len(data)
		if derr != nil && !(errors.Is(derr, io.ErrUnexpectedEOF) && truncated) {
			return false, nil
		}
		end = int(dec.InputOffset())
		if derr != nil || (truncated && end >= r.limit) {
			// Valid JSON for MaxDocumentSize bytes and more: a document too large to read
			// further, whether the rest of the stream is JSON or not.
			if err == nil {
				err = tooLarge(index, -1)
			}
			return true, err
		}
		if err != nil {
			continue // only checking that the rest is JSON
		}
		doc := data[start:end]
		if err = checkDocument(index, doc); err == nil {
			err = d.document(index, doc, nil)
		}
	}
}

// document decodes one document's JSON into objects: js is dropped when it returns. strictErr
// is the error of a YAML document that is valid only with duplicate keys.
func (d *decoder) document(index int, js []byte, strictErr error) error {
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return nil
	}
	// sigs.k8s.io/json keeps integers as int64, as unstructured
	// expects, and reports duplicate fields of JSON input.
	var v any
	strictErrs, err := kjson.UnmarshalStrict(js, &v)
	if err != nil {
		return &docError{index: index, item: -1, syntax: true, reason: err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		if d.lenient {
			return nil
		}
		return &docError{index: index, item: -1, reason: fmt.Sprintf("%s, not a mapping", describeValue(v))}
	}
	if d.lenient && !looksLikeObject(m) {
		return nil
	}
	if strictErr != nil {
		return &docError{index: index, item: -1, syntax: true, reason: strictErr.Error()}
	}
	if len(strictErrs) > 0 {
		return &docError{index: index, item: -1, syntax: true, reason: strictErrs[0].Error()}
	}
	objs, err := expand(m, index)
	if err != nil {
		return err
	}
	if err := d.budget.spend(countNodes(m)); err != nil {
		return err
	}
	d.out = append(d.out, objs...)
	return nil
}

// skipValue is a JSON value that is read (and checked) but not decoded.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// windowReader reads data up to limit, which only grows.
type windowReader struct {
	data       []byte
	pos, limit int
}

func (r *windowReader) grow(limit int) { r.limit = max(r.limit, min(limit, len(r.data))) }

func (r *windowReader) Read(p []byte) (int, error) {
	if r.pos >= r.limit {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.pos:r.limit])
	r.pos += n
	return n, nil
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
