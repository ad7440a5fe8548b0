// Package patch maintains the patch file of a patchUpdated .flux.yaml: a
// multi-document YAML of partial resources that is applied to the output
// of the generators (strategic merge patch for Kubernetes kinds, JSON merge
// patch for custom resources), and rewritten when an image or a policy of a
// generated workload changes, as Flux v1 did with flux-patch.yaml.
package patch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ID identifies the resource a patch file entry applies to. An entry
// matches a generated object of the same API group, kind, namespace and
// name; the version may differ (the generated object's version wins), so
// entries survive a generator moving to a newer version of an API.
type ID struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// IDOf is the ID of an object.
func IDOf(u *unstructured.Unstructured) ID {
	return ID{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// String formats the ID as "apps/v1 Deployment default/foo", or
// "v1 Namespace apps" for an object without namespace.
func (id ID) String() string {
	name := id.Name
	if id.Namespace != "" {
		name = id.Namespace + "/" + id.Name
	}
	return id.APIVersion + " " + id.Kind + " " + name
}

// key is what two IDs must share to name the same object.
type key struct{ group, kind, namespace, name string }

func (id ID) key() key {
	group := ""
	if gv, err := schema.ParseGroupVersion(id.APIVersion); err == nil {
		group = gv.Group
	}
	return key{group: group, kind: id.Kind, namespace: id.Namespace, name: id.Name}
}

// document is one document of a patch file.
type document struct {
	index int    // 1-based position in the file
	text  []byte // as written, ending in a newline
	// An entry has an id and a patch; documents with nothing but comments
	// have neither and are kept as they are when the file is rewritten.
	id    ID
	patch map[string]any
}

func (d *document) isEntry() bool { return d.patch != nil }

// parseFile splits a patch file into its documents and checks that each
// one is a patch that names its resource, once.
func parseFile(data []byte) ([]*document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []*document
	seen := map[key]int{}
	for i := 1; ; i++ {
		text, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("patch file document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if !bytes.HasSuffix(text, []byte("\n")) {
			text = append(text, '\n')
		}
		doc := &document{index: i, text: text}
		docs = append(docs, doc)

		js, err := yaml.YAMLToJSON(text)
		if err != nil {
			return nil, fmt.Errorf("patch file document %d: %w", i, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue // comments only
		}
		var patch map[string]any
		if err := utiljson.Unmarshal(js, &patch); err != nil || patch == nil {
			return nil, fmt.Errorf("patch file document %d: not a YAML mapping", i)
		}
		doc.patch = patch
		u := unstructured.Unstructured{Object: patch}
		doc.id = IDOf(&u)
		var missing []string
		for _, f := range []struct{ name, value string }{{"apiVersion", doc.id.APIVersion}, {"kind", doc.id.Kind}, {"metadata.name", doc.id.Name}} {
			if f.value == "" {
				missing = append(missing, f.name)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("patch file document %d: the patch must name its resource: %s missing", i, strings.Join(missing, ", "))
		}
		if _, err := schema.ParseGroupVersion(doc.id.APIVersion); err != nil {
			return nil, fmt.Errorf("patch file document %d: %w", i, err)
		}
		if prev, ok := seen[doc.id.key()]; ok {
			return nil, fmt.Errorf("patch file documents %d and %d both patch %s", prev, i, doc.id)
		}
		seen[doc.id.key()] = i
	}
	return docs, nil
}

// render joins documents into a patch file.
func render(docs [][]byte) []byte {
	var out bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(d)
	}
	return out.Bytes()
}
