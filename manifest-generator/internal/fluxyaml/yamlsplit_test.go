package fluxyaml

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// yamlSplitCases are streams whose documents decode.go numbers; raw-mode updates find the
// documents of a file by these numbers.
var yamlSplitCases = []string{
	"",
	"\n\n",
	"a: 1\n",
	"a: 1",
	"a: 1\r\nb: 2\r\n",
	"a: 1\r\nb: 2\r",
	"a: |\r\n  x\r\n",
	"---\na: 1\n---\nb: 2\n",
	"---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: four\n---\n\n",
	"a: 1\n--- # a comment\nb: 2\n---   \nc: 3\n",
	"a: 1\n---\r\nb: 2\n",
	"a: 1\n----\nb: 2\n",
	"a: 1\n--- b\n",
	"a: 1\n  ---\nb: 2\n",
	"key: |\n  ---\n  text\n",
	"a: \"x\ry\"\n---",
	"---\xc2\x85\na: 1\n",
	// bufio.Reader.ReadLine reads lines longer than its 4096 bytes in parts.
	"a: " + strings.Repeat("x", 4092) + "\r\n---\nb: " + strings.Repeat("y", 5000),
}

func yamlReaderDocuments(data []byte) ([]string, error) {
	var out []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(doc))
	}
}

func splitDocuments(data []byte) ([]string, error) {
	var out []string
	d := yamlDocuments{data: data}
	for {
		doc, err := d.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(d.normalize(doc)))
	}
}

// The documents are cut and normalized exactly as apimachinery's YAMLReader did when decode.go
// used it.
func TestYAMLDocumentsSplitLikeYAMLReader(t *testing.T) {
	for _, s := range yamlSplitCases {
		g := NewWithT(t)
		want, wantErr := yamlReaderDocuments([]byte(s))
		got, err := splitDocuments([]byte(s))
		g.Expect(got).To(Equal(want), "%q", s)
		if wantErr != nil {
			g.Expect(err).To(MatchError(wantErr.Error()), "%q", s)
		} else {
			g.Expect(err).NotTo(HaveOccurred(), "%q", s)
		}
	}
}

// A document is returned as it is in the stream, without a copy, unless YAMLReader changes it.
func TestYAMLDocumentsCopyNothing(t *testing.T) {
	g := NewWithT(t)
	data := []byte("---\na: 1\n---\nb: 2\n")
	d := yamlDocuments{data: data}
	doc, err := d.next()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(doc)).To(Equal("---\na: 1\n"))
	g.Expect(&d.normalize(doc)[0]).To(BeIdenticalTo(&data[0]))
}

func FuzzYAMLDocuments(f *testing.F) {
	for _, s := range yamlSplitCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := yamlReaderDocuments(data)
		got, err := splitDocuments(data)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("error %v, YAMLReader's %v", err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%d documents, YAMLReader's %d: %q, %q", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("document %d is %q, YAMLReader's %q", i, got[i], want[i])
			}
		}
	})
}
