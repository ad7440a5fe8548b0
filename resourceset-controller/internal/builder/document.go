package builder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const resourcesTemplateName = "resourcesTemplate"

// document is one non-empty document rendered from the resourcesTemplate.
type document struct {
	number int // 1-based, counting only documents with content
	value  any
}

// renderDocuments executes the resourcesTemplate for the bound input and
// splits the output into YAML documents. Documents holding only whitespace or
// comments (what if/range leave behind) are skipped and not counted.
func (b *binding) renderDocuments() ([]document, error) {
	b.buf.Reset()
	if err := b.document.Execute(b.out, nil); err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b.buf.Bytes())))
	var docs []document
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: invalid YAML output: %w", resourcesTemplateName, err)
		}
		v, err := decodeYAML(raw)
		if err != nil {
			return nil, fmt.Errorf("%s document #%d: invalid YAML output: %w", resourcesTemplateName, len(docs)+1, err)
		}
		if v == nil {
			continue
		}
		docs = append(docs, document{number: len(docs) + 1, value: v})
	}
}
