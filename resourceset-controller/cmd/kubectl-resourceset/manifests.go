package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// document is one Kubernetes object of an input file, as JSON.
type document struct {
	// where names the document in messages: "rset.yaml, document 2" (", item 3" inside a List).
	where string
	gvk   schema.GroupVersionKind
	json  []byte
}

// readFile reads the YAML (or JSON) stream of a file, "-" being stdin. Empty documents are
// skipped and the items of a List (what `kubectl get -o yaml` prints for several objects) are
// documents of their own.
func readFile(name string, stdin io.Reader) ([]document, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return readStream(sourceName(name), r)
}

// readInputsOrObjects reads a file that holds either a plain YAML (or JSON) list of inputs, as
// flux-operator's --inputs-from takes, or a stream of objects as readFile reads it: the list,
// or else the documents.
func readInputsOrObjects(name string, stdin io.Reader) ([]rsv1.ResourceSetInput, []document, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, nil, err
	}
	if first, err := yaml.YAMLToJSON(data); err == nil && bytes.HasPrefix(bytes.TrimSpace(first), []byte("[")) {
		var list []rsv1.ResourceSetInput
		if err := json.Unmarshal(first, &list); err != nil {
			return nil, nil, fmt.Errorf("%s: a list of inputs, each a map of names to values: %w", sourceName(name), err)
		}
		return list, nil, nil
	}
	docs, err := readStream(sourceName(name), bytes.NewReader(data))
	return nil, docs, err
}

// readStream reads the documents of a YAML stream; label names it in messages.
func readStream(label string, r io.Reader) ([]document, error) {
	// apimachinery's YAML reader splits the stream on "---" lines, as kubectl does.
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []document
	for n := 1; ; n++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		where := fmt.Sprintf("%s, document %d", label, n)
		data, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if string(data) == "null" {
			continue // only comments or blank lines
		}
		more, err := objects(where, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
}

// objects is the object of one document, or the items of a List.
func objects(where string, data []byte) ([]document, error) {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: not a Kubernetes object: %w", where, err)
	}
	if head.Kind == "" {
		return nil, fmt.Errorf("%s: not a Kubernetes object: kind is not set", where)
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if gv.Group == "" && head.Kind == "List" {
		var out []document
		for i, item := range head.Items {
			more, err := objects(fmt.Sprintf("%s, item %d", where, i+1), item)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
		return out, nil
	}
	return []document{{where: where, gvk: gv.WithKind(head.Kind), json: data}}, nil
}

// is reports whether the document is of the kind of the resourceset-controller's API; a known
// kind at another version of the API is an error, not something to skip silently.
func (d document) is(kind string) (bool, error) {
	if d.gvk.Group != rsv1.GroupVersion.Group || d.gvk.Kind != kind {
		return false, nil
	}
	if d.gvk.Version != rsv1.GroupVersion.Version {
		return false, fmt.Errorf("%s: %s %s is not supported: use %s", d.where, kind, d.gvk.GroupVersion(), rsv1.GroupVersion)
	}
	return true, nil
}

// decode decodes the document strictly: a misspelt field is an error, as the API server's
// field validation would make it.
func (d document) decode(into any) error {
	if err := yaml.UnmarshalStrict(d.json, into); err != nil {
		return fmt.Errorf("%s: %s: %w", d.where, d.gvk.Kind, err)
	}
	return nil
}
