package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// InFile edits, in place, the one document of a multi-document YAML file
// that ref names (objects without a namespace count as defaultNamespace):
// it parses the document with kyaml, runs change on it (SetImageNode,
// SetPolicyNode, ...), and writes it back. Every other document, and every
// separator between them, is kept byte for byte. Within the edited document
// the change is carried into the original text as narrowly as possible:
//
//   - a change of scalar values only (an image, the value of an existing
//     annotation) replaces just those scalars, keeping their quoting;
//   - a structural change (an annotation added or removed) replays the line
//     diff of kyaml's encodings before and after the change on the original
//     lines, so untouched lines keep their bytes and new lines follow the
//     indentation around them;
//   - failing both (a change inside lines kyaml would write differently),
//     the document is re-encoded with kyaml, which keeps comments, key
//     order, quoting and the sequence indentation style.
//
// The first two are checked to parse to the changed document.
//
// It returns the new file and whether it differs from data; it is an error
// when no document, or more than one, matches ref.
func InFile(data []byte, ref Ref, defaultNamespace string, change func(*kyaml.RNode) error) ([]byte, bool, error) {
	var (
		match    segment
		node     *kyaml.RNode
		matches  int
		segments = splitDocuments(data)
	)
	index := 0 // of the document, counting those with any text
	for _, seg := range segments {
		text := data[seg.start:seg.end]
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		index++
		n, err := parseDocument(text)
		if err != nil {
			return nil, false, fmt.Errorf("document %d: %w", index, err)
		}
		if n == nil || n.YNode().Kind != kyaml.MappingNode {
			continue
		}
		if ref.matches(n.GetKind(), n.GetNamespace(), n.GetName(), defaultNamespace) {
			matches++
			match, node = seg, n
		}
	}
	switch {
	case matches == 0:
		return nil, false, fmt.Errorf("no document matches %s", ref)
	case matches > 1:
		return nil, false, fmt.Errorf("%d documents match %s", matches, ref)
	}

	orig := data[match.start:match.end]
	before, err := parseDocument(orig)
	if err != nil {
		return nil, false, err
	}
	if err := change(node); err != nil {
		return nil, false, err
	}
	text, err := renderDocument(orig, before.Document(), node.Document())
	if err != nil {
		return nil, false, fmt.Errorf("writing %s: %w", ref, err)
	}
	out := make([]byte, 0, len(data)+len(text)-len(orig))
	out = append(out, data[:match.start]...)
	out = append(out, text...)
	out = append(out, data[match.end:]...)
	return out, !bytes.Equal(out, data), nil
}

// segment is the byte range of one document of a stream, without the
// "---" separator lines around it.
type segment struct{ start, end int }

// splitDocuments cuts a YAML stream at its "---" lines. Text after "---"
// on the same line ("--- # comment") belongs to the following document.
func splitDocuments(data []byte) []segment {
	var segments []segment
	start := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end < 0 {
			end = len(data)
		} else {
			end += off
			next = end + 1
		}
		line := data[off:end]
		if bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r') {
			segments = append(segments, segment{start, off})
			if len(bytes.TrimSpace(line[3:])) == 0 {
				start = next
			} else {
				start = off + 3
			}
		}
		off = next
	}
	return append(segments, segment{start, len(data)})
}

// parseDocument parses one document; it returns nil for a document without
// content (only comments or blank).
func parseDocument(text []byte) (*kyaml.RNode, error) {
	n, err := kyaml.Parse(string(text))
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if d := n.Document(); d == nil || (d.Kind == kyaml.DocumentNode && len(d.Content) == 0) {
		return nil, nil
	}
	return n, nil
}

// renderDocument writes the document after, which was parsed from orig
// (where before is an untouched parse of orig) and then changed.
func renderDocument(orig []byte, before, after *kyaml.Node) ([]byte, error) {
	if text, ok := spliceScalars(orig, before, after); ok {
		return text, nil
	}
	opts := &kyaml.EncoderOptions{SeqIndent: kyaml.SequenceIndentStyle(kyaml.DeriveSeqIndentStyle(string(orig)))}
	text, err := kyaml.MarshalWithOptions(after, opts)
	if err != nil {
		return nil, err
	}
	if encBefore, err := kyaml.MarshalWithOptions(before, opts); err == nil {
		if merged, ok := mergeLines(orig, encBefore, text, after); ok {
			return merged, nil
		}
	}
	if !bytes.HasSuffix(orig, []byte("\n")) {
		text = bytes.TrimSuffix(text, []byte("\n"))
	}
	return text, nil
}

// scalarEdit replaces the source text of a scalar.
type scalarEdit struct {
	line, column int // of the old scalar, 1-based, as the parser reports
	old          *kyaml.Node
	value        string // the new scalar, rendered
}

// spliceScalars writes after into orig by replacing the text of the
// scalars whose value changed. It gives up (ok false) when anything but
// scalar values changed or a scalar cannot be located or rendered on one
// line, and checks that the result parses to the same tree as after.
func spliceScalars(orig []byte, before, after *kyaml.Node) ([]byte, bool) {
	var edits []scalarEdit
	if !sameShape(before, after, &edits) {
		return nil, false
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	// Apply from the end so earlier offsets stay valid.
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		if e.line < 1 || e.line > len(lines) {
			return nil, false
		}
		line := lines[e.line-1]
		start := runeOffset(line, e.column-1)
		if start < 0 {
			return nil, false
		}
		end := scalarEnd(line, start, e.old)
		if end < 0 {
			return nil, false
		}
		edited := make([]byte, 0, len(line)+len(e.value))
		edited = append(edited, line[:start]...)
		edited = append(edited, e.value...)
		edited = append(edited, line[end:]...)
		lines[e.line-1] = edited
	}
	text := bytes.Join(lines, nil)

	if !parsesTo(text, after) {
		return nil, false
	}
	return text, true
}

// parsesTo reports whether text parses to the same document as want.
func parsesTo(text []byte, want *kyaml.Node) bool {
	check, err := parseDocument(text)
	if err != nil || check == nil {
		return false
	}
	w, err1 := kyaml.String(want)
	g, err2 := kyaml.String(check.Document())
	return err1 == nil && err2 == nil && w == g
}

// sameShape compares two trees and collects the scalars whose value
// changed; it reports false on any other difference.
func sameShape(a, b *kyaml.Node, edits *[]scalarEdit) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Anchor != b.Anchor ||
		a.HeadComment != b.HeadComment || a.LineComment != b.LineComment || a.FootComment != b.FootComment ||
		len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == kyaml.ScalarNode {
		if a.Value == b.Value && a.Tag == b.Tag && a.Style == b.Style {
			return true
		}
		value, ok := renderScalar(b)
		if !ok {
			return false
		}
		*edits = append(*edits, scalarEdit{line: a.Line, column: a.Column, old: a, value: value})
		return true
	}
	if a.Style != b.Style || a.Tag != b.Tag {
		return false
	}
	for i := range a.Content {
		if !sameShape(a.Content[i], b.Content[i], edits) {
			return false
		}
	}
	return true
}

// renderScalar encodes a scalar on its own; ok is false when it does not
// fit on one line or could change meaning inside a flow collection.
func renderScalar(n *kyaml.Node) (string, bool) {
	if n.Style&(kyaml.LiteralStyle|kyaml.FoldedStyle|kyaml.FlowStyle) != 0 {
		return "", false
	}
	s, err := kyaml.String(&kyaml.Node{Kind: kyaml.ScalarNode, Value: n.Value, Tag: n.Tag, Style: n.Style})
	if err != nil {
		return "", false
	}
	s = strings.TrimSuffix(s, "\n")
	if s == "" || strings.ContainsAny(s, "\n\r") {
		return "", false
	}
	if s[0] != '"' && s[0] != '\'' && strings.ContainsAny(s, ",[]{}") {
		return "", false
	}
	return s, true
}

// runeOffset is the byte offset of the column-th character of line (both
// counted from 0), or -1.
func runeOffset(line []byte, column int) int {
	off := 0
	for i := 0; i < column; i++ {
		if off >= len(line) {
			return -1
		}
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off
}

// scalarEnd is the byte offset just past the scalar n starting at start in
// line, or -1 when the source text there is not n on a single line.
func scalarEnd(line []byte, start int, n *kyaml.Node) int {
	rest := line[start:]
	switch {
	case n.Style&kyaml.DoubleQuotedStyle != 0:
		if len(rest) == 0 || rest[0] != '"' {
			return -1
		}
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return start + i + 1
			case '\n':
				return -1
			}
		}
		return -1
	case n.Style&kyaml.SingleQuotedStyle != 0:
		if len(rest) == 0 || rest[0] != '\'' {
			return -1
		}
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\'':
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				return start + i + 1
			case '\n':
				return -1
			}
		}
		return -1
	case n.Style == 0 || n.Style == kyaml.TaggedStyle:
		if n.Style == kyaml.TaggedStyle || !bytes.HasPrefix(rest, []byte(n.Value)) {
			return -1
		}
		end := len(n.Value)
		if end < len(rest) && !strings.ContainsRune(" \t\r\n#,]}", rune(rest[end])) {
			return -1
		}
		return start + end
	default:
		return -1
	}
}
