package fluxyaml

import "fmt"

// The limits of one document of generator output or of a raw file, checked before the document
// is converted from YAML to JSON. Converting YAML takes far more memory than the text: an 8 MiB
// document of one-letter list items is two million nodes, which sigs.k8s.io/yaml converts with
// a heap of 500 MB, so the size of a document is not bound enough; its nodes are counted
// first, in the text.
const (
	// MaxDocumentSize is the largest document, in bytes. No Kubernetes object comes near it:
	// the API server refuses requests over 3 MiB, and etcd stores at most 1.5 MiB an object.
	MaxDocumentSize = 8 << 20
	// MaxDocumentNodes is the largest number of nodes a document may have by estimateNodes,
	// which counts high. The largest objects are CRDs of a few thousand nodes (Gateway API's
	// HTTPRoute: 326 KB, 2,362 nodes, estimated 4,375); 524,288 are 20,000 ordinary objects in
	// one List. Decoding a document at the limit takes a heap of 170 to 220 MB.
	MaxDocumentNodes = 1 << 19
)

// checkDocument refuses a document larger than the limits above; doc is its text, before it
// is converted.
func checkDocument(index int, doc []byte) error {
	if len(doc) > MaxDocumentSize {
		return tooLarge(index, len(doc))
	}
	if n := estimateNodes(doc); n > MaxDocumentNodes {
		return &docError{index: index, item: -1, tooLarge: true,
			reason: fmt.Sprintf("up to %d nodes (counted in its text before it is decoded), over the limit of %d nodes for one document (no Kubernetes object has that many)", n, MaxDocumentNodes)}
	}
	return nil
}

// tooLarge is the error of a document of size bytes; a size of -1 is more than MaxDocumentSize.
func tooLarge(index, size int) error {
	what := fmt.Sprintf("%d bytes", size)
	if size < 0 {
		what = fmt.Sprintf("more than %d bytes", MaxDocumentSize)
	}
	return &docError{index: index, item: -1, tooLarge: true,
		reason: fmt.Sprintf("%s, over the limit of %d bytes (8 MiB) for one document (no Kubernetes object is that large)", what, MaxDocumentSize)}
}

// estimateNodes counts the nodes a YAML (or JSON) document may decode to, never fewer than it
// has, without decoding it: one for the document, and one for each character that can start a
// node, wherever it is: every ",", "[", "{", ":" and "?" (in a flow collection ":" and "?" need
// no space after them), and "-" followed by a space, a tab, a line break or the end. Text in
// scalars and comments counts too (an ordinary manifest counts 1.3 to 1.8 times its nodes).
// Aliases are not counted: sigs.k8s.io/yaml refuses a document whose nodes come mostly from
// aliases ("document contains excessive aliasing"), and what they add is counted after
// decoding, by countNodes.
func estimateNodes(doc []byte) int {
	n := 1
	for i, c := range doc {
		switch c {
		case ',', '[', '{', ':', '?':
			n++
		case '-':
			if i+1 == len(doc) {
				n++
				break
			}
			switch doc[i+1] {
			// 0xC2 and 0xE2 start the Unicode line breaks YAML knows (NEL, LS, PS).
			case ' ', '\t', '\r', '\n', 0, 0xC2, 0xE2:
				n++
			}
		}
	}
	return n
}

// countNodes counts the nodes of a decoded document: every mapping, sequence and scalar,
// v itself included.
func countNodes(v any) int64 {
	n := int64(1)
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += countNodes(x)
		}
	case []any:
		for _, x := range v {
			n += countNodes(x)
		}
	}
	return n
}

// nodeBudget counts the nodes of the objects decoded for one sync (all its generators, or all
// its YAML files) against Limits.MaxOutputNodes. A nil *nodeBudget counts nothing.
type nodeBudget struct {
	limit, used int64
	// source and setting name the config file or path, and the flag, in the error.
	source, setting string
}

// nodeBudget returns the budget of one sync; source names where the objects come from.
func (l Limits) nodeBudget(source string) *nodeBudget {
	return &nodeBudget{limit: l.MaxOutputNodes, source: source, setting: l.Names.Nodes}
}

// spend counts n more nodes, and returns a *LimitError once they are over the limit.
func (b *nodeBudget) spend(n int64) error {
	if b == nil {
		return nil
	}
	b.used += n
	if b.limit > 0 && b.used > b.limit {
		return &LimitError{ConfigFile: b.source, What: "nodes", Value: b.used, Limit: b.limit, Setting: b.setting}
	}
	return nil
}

func (b *nodeBudget) spent() int64 {
	if b == nil {
		return 0
	}
	return b.used
}

// reset forgets what was spent after used, on a stream decoded again.
func (b *nodeBudget) reset(used int64) {
	if b != nil {
		b.used = used
	}
}
