package fluxyaml

import (
	"bytes"
	"fmt"
	"io"
)

// yamlDocuments cuts a YAML stream into documents as apimachinery's YAMLReader (the splitter
// of its YAMLOrJSONDecoder) does, so that documents are numbered as before, and raw-mode
// updates find them in their files: at each line that starts with "---", which may be followed
// only by spaces and a comment, and that ends a document (it starts the next one when the
// document before it is empty). Unlike YAMLReader, it copies
// nothing: next returns a document as it is in the stream, whose size can be checked before
// anything is done with it, and normalize gives the text YAMLReader would have returned.
type yamlDocuments struct {
	data []byte
	pos  int
}

// next returns the text of the next document, io.EOF after the last one, or the error of an
// invalid separator ("--- x").
func (d *yamlDocuments) next() ([]byte, error) {
	start, end := -1, -1
	for d.pos < len(d.data) {
		lineStart := d.pos
		line := d.data[d.pos:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
			d.pos += i + 1
		} else {
			d.pos = len(d.data)
		}
		if bytes.HasPrefix(line, []byte("---")) {
			// YAMLReader allows what bytes.TrimSpace removes, then a comment.
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", rest)
			}
			if start >= 0 {
				return d.data[start:end], nil
			}
			// YAMLReader keeps a separator that starts a document in it: "---\n---\n" is
			// the document "---\n", which decodes to nothing but is counted.
		}
		if start < 0 {
			start = lineStart
		}
		end = d.pos
	}
	if start >= 0 {
		return d.data[start:end], nil
	}
	return nil, io.EOF
}

// normalize returns doc as YAMLReader returns it: its lines read by bufio.Reader.ReadLine,
// which drops "\n" and "\r\n", and each ended with "\n". Only a document that differs is
// copied.
func (d *yamlDocuments) normalize(doc []byte) []byte {
	terminated := len(doc) > 0 && doc[len(doc)-1] == '\n'
	if terminated && !bytes.Contains(doc, []byte("\r\n")) {
		return doc
	}
	out := bytes.ReplaceAll(doc, []byte("\r\n"), []byte("\n"))
	if !terminated {
		out = append(out, '\n')
	}
	return out
}
