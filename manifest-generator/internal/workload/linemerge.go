package workload

import (
	"bytes"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxMergeLines bounds the quadratic line diffs of mergeLines.
const maxMergeLines = 5000

// mergeLines carries a structural change into the original text of a
// document. encBefore and encAfter are kyaml's encodings of the document
// before and after the change. The lines of orig are aligned with those of
// encBefore (up to whitespace, which is where kyaml's output differs most
// from hand-written YAML: indentation, spacing before comments); then the
// line diff from encBefore to encAfter is replayed on orig: lines kept keep
// their original bytes, removed lines go, added lines come from encAfter,
// re-indented like their neighbours in orig. Parts of orig that kyaml
// writes differently (a folded scalar, an escaped string, blank lines) are
// kept or removed as a whole. The result must parse to after, otherwise ok
// is false and the caller falls back to encAfter. It reads best whole: the replay of the
// diff on the aligned chunks, in the order it writes the lines.
func mergeLines(orig, encBefore, encAfter []byte, after *kyaml.Node) ([]byte, bool) {
	o := bytes.SplitAfter(orig, []byte("\n"))
	if len(o) > 0 && len(o[len(o)-1]) == 0 {
		o = o[:len(o)-1]
	}
	b := strings.SplitAfter(strings.TrimSuffix(string(encBefore), "\n"), "\n")
	a := strings.SplitAfter(strings.TrimSuffix(string(encAfter), "\n"), "\n")
	if len(o) > maxMergeLines || len(b) > maxMergeLines || len(a) > maxMergeLines {
		return nil, false
	}

	// What happens to each line of encBefore, and what is inserted before
	// each of them (inserts[len(b)] goes at the end).
	kept := make([]bool, len(b))
	inserts := make([][]string, len(b)+1)
	for _, op := range diffLines(b, a, func(x, y string) bool { return x == y }) {
		switch op.kind {
		case opKeep:
			kept[op.x] = true
		case opInsert:
			inserts[op.x] = append(inserts[op.x], a[op.y])
		}
	}

	origText := make([]string, len(o))
	for i := range o {
		origText[i] = string(o[i])
	}
	chunks := alignChunks(origText, b)

	eol := "\n"
	if bytes.Contains(orig, []byte("\r\n")) {
		eol = "\r\n"
	}
	var out bytes.Buffer
	refB, refO := 0, 0 // indentation of the last aligned line, in encBefore and orig
	writeInserts := func(at int) {
		for _, line := range inserts[at] {
			if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
				out.WriteString(eol)
			}
			out.WriteString(reindent(strings.TrimSuffix(line, "\n"), refB, refO))
			out.WriteString(eol)
		}
	}
	writeInserts(0)
	for _, c := range chunks {
		if c.b0 == c.b1 { // only in orig: blank lines, comments kyaml moved
			for i := c.o0; i < c.o1; i++ {
				out.Write(o[i])
			}
			continue
		}
		for p := c.b0 + 1; p < c.b1; p++ {
			if len(inserts[p]) > 0 {
				return nil, false // an insertion inside lines written differently
			}
		}
		keep := kept[c.b0]
		for i := c.b0; i < c.b1; i++ {
			if kept[i] != keep {
				return nil, false // lines written differently partly changed
			}
		}
		if keep {
			for i := c.o0; i < c.o1; i++ {
				out.Write(o[i])
			}
		}
		if c.o1-c.o0 == 1 && c.b1-c.b0 == 1 {
			refB, refO = indentOf(b[c.b0]), indentOf(string(o[c.o0]))
		}
		writeInserts(c.b1)
	}
	text := out.Bytes()
	if !bytes.HasSuffix(orig, []byte("\n")) {
		text = bytes.TrimSuffix(text, []byte(eol))
	}
	if !parsesTo(text, after) {
		return nil, false
	}
	return text, true
}

// chunk is a run of lines of the original file (o0 to o1) aligned with a run of the encoded
// ones (b0 to b1).
type chunk struct{ o0, o1, b0, b1 int }

// alignChunks aligns the lines of the original file with those kyaml encoded before the change:
// each chunk is a single line that matches (ignoring the amount of whitespace), or a run of
// lines written differently (m original lines for n encoded ones).
func alignChunks(orig, encoded []string) []chunk {
	var chunks []chunk
	var pending *chunk
	flushPending := func() {
		if pending != nil {
			chunks = append(chunks, *pending)
			pending = nil
		}
	}
	for _, op := range diffLines(orig, encoded, sameWords) {
		switch op.kind {
		case opKeep:
			flushPending()
			chunks = append(chunks, chunk{op.x, op.x + 1, op.y, op.y + 1})
		case opDelete: // only in orig
			if pending == nil {
				pending = &chunk{op.x, op.x, op.y, op.y}
			}
			pending.o1 = op.x + 1
		case opInsert: // only in encBefore
			if pending == nil {
				pending = &chunk{op.x, op.x, op.y, op.y}
			}
			pending.b1 = op.y + 1
		}
	}
	flushPending()
	return chunks
}

// sameWords compares lines ignoring the amount of whitespace.
func sameWords(x, y string) bool {
	return strings.Join(strings.Fields(x), " ") == strings.Join(strings.Fields(y), " ")
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// reindent moves a line from kyaml's indentation to the original's, judged
// by a neighbouring line indented refB in kyaml's output and refO in orig:
// scaled when orig uses a multiple of kyaml's indentation, shifted otherwise.
func reindent(line string, refB, refO int) string {
	n := indentOf(line)
	switch {
	case refB > 0 && refO%refB == 0:
		n = n * refO / refB
	default:
		n += refO - refB
	}
	if n < 0 {
		n = 0
	}
	return strings.Repeat(" ", n) + strings.TrimLeft(line, " ")
}

type opKind int

const (
	opKeep   opKind = iota // x[op.x] matches y[op.y]
	opDelete               // x[op.x] only; op.y is the position in y
	opInsert               // y[op.y] only; op.x is the position in x
)

type lineOp struct {
	kind opKind
	x, y int
}

// diffLines is a longest-common-subsequence diff from x to y.
func diffLines(x, y []string, equal func(a, b string) bool) []lineOp {
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	eq := func(i, j int) bool { return equal(x[i], y[j]) }
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if eq(i, j) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && eq(i, j) && lcs[i][j] == lcs[i+1][j+1]+1:
			ops = append(ops, lineOp{opKeep, i, j})
			i++
			j++
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, lineOp{opInsert, i, j})
			j++
		default:
			ops = append(ops, lineOp{opDelete, i, j})
			i++
		}
	}
	return ops
}
