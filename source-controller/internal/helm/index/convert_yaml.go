package index

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// YAML is read line by line and cut where block-style indentation proves a boundary; each
// piece is then decoded by yaml.v3 on its own. yaml.v3 cannot do this itself: its Decoder
// builds the node tree of the whole document before any UnmarshalYAML runs, which for the
// 50 MiB benchmark index peaks at about 280 MiB of heap (measured), on top of the input.
//
// The boundaries used, both exact for block-style YAML:
//   - A line that starts in column 0 and is not blank, a comment, a sequence dash or a
//     document marker starts a new top-level key (a value's continuation lines are indented).
//   - Under a block "entries:", the first indented line fixes the indentation of chart
//     names; a later line at exactly that indentation that is not blank, a comment or a
//     sequence dash (Helm writes a chart's list at the indentation of its name) starts the
//     next chart.
//
// The one shape this cannot follow is a multi-line quoted string whose continuation lines
// are less indented than the key they belong to, which yaml.v3 tolerates; no index writer
// produces it. Anchors defined in one chart and used in another are not resolved either.
// Everything else that is not plain block style is decoded whole (see modeRest).

type splitMode int

const (
	modeNone     splitMode = iota // before the first top-level key
	modeBuffered                  // a top-level key other than a block entries: buffered whole
	modeEntries                   // a block entries: streamed chart by chart
	modeRest                      // unsplittable: everything up to the end is buffered whole
)

type yamlSplitter struct {
	c *converter

	br   *bufio.Reader
	line []byte // the line being read, reused
	n    int    // number of that line, from 1

	mode        splitMode
	contentSeen bool
	buf         []byte // modeBuffered, modeRest: the block so far
	bufLine     int    // line number of buf's first line

	entriesLine int    // modeEntries: line of "entries:"
	chartIndent int    // modeEntries: indentation of chart names, -1 before the first
	chunk       []byte // modeEntries: the current chart's lines
	filtered    []byte // modeEntries: chunk without the fields Convert does not read
	chunkLine   int    // line number of chunk's first line
}

func (c *converter) convertYAML(br *bufio.Reader) error {
	s := &yamlSplitter{c: c, br: br}
	if err := s.run(); err != nil {
		return err
	}
	return s.finishBlock()
}

// readLine returns the next line with its terminator; the slice is valid until the next call.
func (s *yamlSplitter) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.line = append(s.line, frag...)
			continue
		}
		line := frag
		if len(s.line) > 0 {
			s.line = append(s.line, frag...)
			line = s.line
		}
		if err == io.EOF && len(line) > 0 {
			err = nil // the last line has no terminator; EOF comes with the next call
		}
		if err == nil {
			s.n++
		}
		return line, err
	}
}

func (s *yamlSplitter) run() error {
	for {
		line, err := s.readLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if s.mode == modeRest {
			s.buf = append(s.buf, line...)
			continue
		}
		ind := indentOf(line)
		rest := line[ind:]
		if isBlank(rest) || rest[0] == '#' {
			switch s.mode {
			case modeBuffered:
				s.buf = append(s.buf, line...)
			case modeEntries:
				if s.chunk != nil {
					s.chunk = append(s.chunk, line...)
				}
			}
			continue
		}
		if ind == 0 {
			end, err := s.column0(line)
			if end || err != nil {
				return err
			}
			continue
		}
		if err := s.indented(line, ind, rest); err != nil {
			return err
		}
	}
}

// column0 handles a non-blank, non-comment line starting in column 0. It returns true at the
// end of the first YAML document: Helm, like sigs.k8s.io/yaml, reads only that one.
func (s *yamlSplitter) column0(line []byte) (bool, error) {
	switch {
	case isMarker(line, "---"):
		if s.contentSeen {
			return true, nil
		}
		if after := line[3:]; !isBlank(after) && !isComment(after) {
			// "--- value": rare enough to decode whole.
			s.startRest(line)
		}
		return false, nil
	case isMarker(line, "..."):
		return true, nil
	case line[0] == '%' && !s.contentSeen:
		return false, nil // a directive; yaml.v3 needs none for an index
	case isDash(line):
		// A block sequence in column 0 continues a top-level key's value ("key:\n- a").
		switch s.mode {
		case modeNone:
			s.startRest(line) // the root is a sequence: let the decoder say so
		case modeBuffered:
			s.buf = append(s.buf, line...)
		case modeEntries:
			if s.chartIndent < 0 {
				return false, fmt.Errorf("%w: line %d: entries must map chart names to lists of versions, not be a list",
					ErrInvalidIndex, s.n)
			}
			s.chunk = append(s.chunk, line...)
		}
		return false, nil
	}

	// A new top-level key.
	if err := s.finishBlock(); err != nil {
		return false, err
	}
	s.contentSeen = true
	key, inline, ok := parseTopKey(line)
	switch {
	case !ok:
		s.startRest(line)
	case key == "entries" && !inline:
		if s.c.topKeys[key] {
			return false, fmt.Errorf("%w: line %d: entries is defined twice", ErrInvalidIndex, s.n)
		}
		s.c.topKeys[key] = true
		s.mode = modeEntries
		s.entriesLine = s.n
		s.chartIndent = -1
		s.chunk = nil
	default:
		s.mode = modeBuffered
		s.buf = append(s.buf[:0], line...)
		s.bufLine = s.n
	}
	return false, nil
}

// indented handles a non-blank, non-comment line with indentation ind > 0.
func (s *yamlSplitter) indented(line []byte, ind int, rest []byte) error {
	switch s.mode {
	case modeNone:
		s.startRest(line) // an indented root mapping, or a flow document
	case modeBuffered:
		s.buf = append(s.buf, line...)
	case modeEntries:
		switch {
		case s.chartIndent < 0:
			if isDash(rest) {
				return fmt.Errorf("%w: line %d: entries must map chart names to lists of versions, not be a list",
					ErrInvalidIndex, s.n)
			}
			if strings.IndexByte("{[&*!|>?", rest[0]) >= 0 {
				// A flow mapping ("entries:\n  {}"), a tag, an anchor…: decode entries whole,
				// padded with newlines so that yaml.v3's line numbers stay right.
				s.mode = modeBuffered
				s.buf = append(s.buf[:0], "entries:"...)
				for range s.n - s.entriesLine {
					s.buf = append(s.buf, '\n')
				}
				s.buf = append(s.buf, line...)
				s.bufLine = s.entriesLine
				delete(s.c.topKeys, "entries") // decodeTop registers it again
				return nil
			}
			s.chartIndent = ind
			s.startChunk(line)
		case ind == s.chartIndent && !isDash(rest):
			if err := s.flushChunk(); err != nil {
				return err
			}
			s.startChunk(line)
		default:
			// Deeper lines belong to the current chart; shallower ones are invalid YAML,
			// which decoding the chunk reports with its line.
			s.chunk = append(s.chunk, line...)
		}
	}
	return nil
}

func (s *yamlSplitter) startRest(line []byte) {
	s.mode = modeRest
	s.contentSeen = true
	s.buf = append(s.buf[:0], line...)
	s.bufLine = s.n
}

func (s *yamlSplitter) startChunk(line []byte) {
	s.chunk = append(s.chunk[:0], line...)
	s.chunkLine = s.n
}

// finishBlock decodes or flushes whatever the current top-level block holds.
func (s *yamlSplitter) finishBlock() error {
	mode := s.mode
	s.mode = modeNone
	switch mode {
	case modeBuffered, modeRest:
		return s.c.decodeTop(s.buf, s.bufLine)
	case modeEntries:
		if s.chartIndent < 0 {
			s.c.entries = entriesNull
			return nil
		}
		s.c.entries = entriesPresent
		return s.flushChunk()
	}
	return nil
}

// flushChunk decodes one chart's lines and writes its section.
func (s *yamlSplitter) flushChunk() error {
	if len(s.chunk) == 0 {
		return nil
	}
	off := s.chunkLine - 1
	s.c.largestChunk = max(s.c.largestChunk, len(s.chunk))
	var doc yaml.Node
	err := errSkipFilter
	if filterFields {
		s.filtered = filterChunk(s.filtered[:0], s.chunk)
		err = yaml.Unmarshal(s.filtered, &doc)
	}
	if err != nil {
		// Whatever the filter may have got wrong, the chunk as written decides: it decodes
		// the same, or fails with the error the index deserves.
		doc = yaml.Node{}
		if err := yaml.Unmarshal(s.chunk, &doc); err != nil {
			return yamlError(err, off, s.chunk)
		}
		if filterFields {
			s.c.filterFallbacks++
		}
	}
	s.chunk = s.chunk[:0]
	if len(doc.Content) == 0 {
		return nil
	}
	m := deref(doc.Content[0])
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%w: line %d: entries must map chart names to lists of versions, found %s",
			ErrInvalidIndex, m.Line+off, describe(m))
	}
	return s.c.yamlCharts(m, off)
}

// decodeTop decodes a buffered part of the document: one or more top-level keys.
func (c *converter) decodeTop(b []byte, firstLine int) error {
	off := firstLine - 1
	c.largestChunk = max(c.largestChunk, len(b))
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return yamlError(err, off, b)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		if isNull(root) {
			return nil
		}
		return fmt.Errorf("%w: line %d: an index must be a mapping, found %s", ErrInvalidIndex, root.Line+off, describe(root))
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		if c.topKeys[k.Value] {
			return fmt.Errorf("%w: line %d: %s is defined twice", ErrInvalidIndex, k.Line+off, k.Value)
		}
		c.topKeys[k.Value] = true
		switch k.Value {
		case "apiVersion":
			switch {
			case isNull(v):
			case v.Kind == yaml.ScalarNode:
				c.apiVersion = v.Value
			default:
				return fmt.Errorf("%w: line %d: apiVersion must be a string, found %s", ErrInvalidIndex, v.Line+off, describe(v))
			}
		case "entries":
			switch {
			case isNull(v):
				c.entries = entriesNull
			case v.Kind == yaml.MappingNode:
				c.entries = entriesPresent
				c.entriesWhole = true
				if err := c.yamlCharts(v, off); err != nil {
					return err
				}
			default:
				return fmt.Errorf("%w: line %d: entries must map chart names to lists of versions, found %s",
					ErrInvalidIndex, v.Line+off, describe(v))
			}
		}
	}
	return nil
}

// yamlCharts converts the charts of an entries mapping (or of a one-chart chunk of it).
func (c *converter) yamlCharts(m *yaml.Node, off int) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%w: line %d: a chart name must be a string, found %s", ErrInvalidIndex, k.Line+off, describe(k))
		}
		name := k.Value
		if err := c.markChart(name, "line", k.Line+off); err != nil {
			return err
		}
		var items []*yaml.Node
		switch {
		case isNull(v):
		case v.Kind == yaml.SequenceNode:
			items = v.Content
		default:
			return fmt.Errorf("%w: line %d: chart %q: expected a list of versions, found %s",
				ErrInvalidIndex, v.Line+off, name, describe(v))
		}
		entries := make([]*rawEntry, 0, len(items))
		for _, item := range items {
			item = deref(item)
			switch {
			case isNull(item):
				entries = append(entries, nil)
			case item.Kind == yaml.MappingNode:
				canonicalKeys(item, entryFields, entryNesting)
				e := &rawEntry{where: "line " + itoa(item.Line+off)}
				if err := item.Decode(e); err != nil {
					return fmt.Errorf("chart %q: %w", name, yamlError(err, off, nil))
				}
				entries = append(entries, e)
			default:
				return fmt.Errorf("%w: line %d: chart %q: a version entry must be a mapping, found %s",
					ErrInvalidIndex, item.Line+off, name, describe(item))
			}
		}
		if err := c.addChart(name, entries); err != nil {
			return err
		}
	}
	return nil
}

// The keys of a version entry, and of the mappings some of its fields hold, as rawEntry and the
// types it holds name them.
var (
	entryFields  = []string{"apiVersion", "name", "version", "appVersion", "type", "deprecated", "urls", "digest", "created", "maintainers", "dependencies"}
	entryNesting = map[string][]string{"maintainers": {"name", "email", "url"}, "dependencies": {"name", "alias"}}
)

// canonicalKeys renames the keys of the mapping m that match one of fields case-insensitively
// to that field: Helm decodes index entries with encoding/json (through JSON), which matches
// keys that way ("Version:" is the version, "ALIAS:" the alias), where yaml.v3 matches them
// exactly. Two keys that then coincide ("name" and "Name") are refused by the decoder as
// duplicates. Merged mappings ("<<") are renamed too, and the mappings the value of a key
// holds (alone or in a list) with the fields nested gives for that key.
func canonicalKeys(m *yaml.Node, fields []string, nested map[string][]string) {
	if m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if k.Value == "<<" {
			canonicalItems(v, fields, nested)
			continue
		}
		for _, f := range fields {
			if strings.EqualFold(k.Value, f) {
				k.Value = f
				break
			}
		}
		if inner, ok := nested[k.Value]; ok {
			canonicalItems(v, inner, nil)
		}
	}
}

// canonicalItems is canonicalKeys for a mapping or for each mapping of a list.
func canonicalItems(n *yaml.Node, fields []string, nested map[string][]string) {
	if n.Kind != yaml.SequenceNode {
		canonicalKeys(n, fields, nested)
		return
	}
	for _, item := range n.Content {
		canonicalKeys(deref(item), fields, nested)
	}
}

var lineRef = regexp.MustCompile(`line (\d+)`)

// yamlError turns a yaml.v3 error about a chunk into an ErrInvalidIndex with line numbers of
// the whole file. Some yaml.v3 errors carry no line; chunk then says which lines failed.
func yamlError(err error, off int, chunk []byte) error {
	var msg string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = strings.Join(te.Errors, "; ")
	} else {
		msg = strings.TrimPrefix(err.Error(), "yaml: ")
	}
	msg = lineRef.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(m[len("line "):])
		return "line " + strconv.Itoa(n+off)
	})
	if chunk != nil && !lineRef.MatchString(msg) {
		last := off + bytes.Count(chunk, []byte("\n"))
		if !bytes.HasSuffix(chunk, []byte("\n")) {
			last++
		}
		if last <= off+1 {
			msg += fmt.Sprintf(" (in line %d)", off+1)
		} else {
			msg += fmt.Sprintf(" (in lines %d-%d)", off+1, last)
		}
	}
	return fmt.Errorf("%w: %s", ErrInvalidIndex, msg)
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%s %q", n.ShortTag(), n.Value)
	}
	return "an unexpected node"
}

func indentOf(line []byte) int {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	return i
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func isComment(b []byte) bool {
	for i, c := range b {
		if c != ' ' && c != '\t' {
			return b[i] == '#'
		}
	}
	return false
}

// isDash reports whether b starts with a block sequence indicator.
func isDash(b []byte) bool {
	return len(b) > 0 && b[0] == '-' && (len(b) == 1 || isSpace(b[1]))
}

func isMarker(line []byte, m string) bool {
	return len(line) >= 3 && string(line[:3]) == m && (len(line) == 3 || isSpace(line[3]))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// parseTopKey reads the key of a "key: value" line. inline is whether a value follows on
// the same line. ok is false for anything but a plain or quoted scalar key, which the caller
// then leaves to the decoder.
func parseTopKey(line []byte) (key string, inline, ok bool) {
	k, value, ok := splitKey(line)
	return string(k), ok && len(value) > 0 && value[0] != '#', ok
}

// splitKey splits a "key: value" line into its key and the value's text (trimmed, possibly
// a comment or empty). A plain key aliases line.
func splitKey(line []byte) (key, value []byte, ok bool) {
	if len(line) == 0 || isDash(line) {
		return nil, nil, false
	}
	var after []byte
	switch line[0] {
	case '"', '\'':
		end := quotedEnd(line)
		if end < 0 {
			return nil, nil, false
		}
		var k string
		if err := yaml.Unmarshal(line[:end+1], &k); err != nil {
			return nil, nil, false
		}
		key = []byte(k)
		after = trimSpace(line[end+1:])
		if len(after) == 0 || after[0] != ':' || (len(after) > 1 && !isSpace(after[1])) {
			return nil, nil, false
		}
		after = after[1:]
	case '?', '&', '*', '!', '{', '[', '|', '>', '@', '`', ',', ']', '}', '\t', ':', '#', '%':
		return nil, nil, false
	default:
		i := 0
		for ; i < len(line); i++ {
			if line[i] == ':' && (i+1 == len(line) || isSpace(line[i+1])) {
				break
			}
			if line[i] == '#' && i > 0 && isSpace(line[i-1]) {
				return nil, nil, false
			}
		}
		if i == len(line) {
			return nil, nil, false
		}
		key = bytes.TrimRight(line[:i], " \t")
		after = line[i+1:]
	}
	return key, trimSpace(after), true
}

// quotedEnd returns the index of the quote closing the scalar line starts with, or -1.
func quotedEnd(line []byte) int {
	q := line[0]
	for i := 1; i < len(line); i++ {
		switch {
		case q == '"' && line[i] == '\\':
			i++
		case line[i] == q:
			if q == '\'' && i+1 < len(line) && line[i+1] == '\'' {
				i++ // '' is an escaped quote
				continue
			}
			return i
		}
	}
	return -1
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// Most of an index's bytes are fields Convert does not read: annotations (changelogs, image
// lists), descriptions, keywords, sources, icons. Parsing them is most of yaml.v3's work, so
// before a chart's chunk is decoded, the lines of every other field of a version entry are
// blanked. Blank lines, not removed ones, so that line numbers in errors stay those of the
// file. If the filtered chunk does not parse, the original is decoded instead, so the filter
// can only make conversion faster, never different: it needs to be right about where a
// field ends only in the cases where the result still parses, which it is for block style.

// filterFields switches the filter; tests turn it off to compare.
var filterFields = true

// errSkipFilter stands for "no filtered decode was tried".
var errSkipFilter = errors.New("filter off")

// keepKeys are the entry fields Convert reads ("<<" merges other fields in).
var keepKeys = map[string]bool{
	"apiVersion": true, "name": true, "version": true, "appVersion": true, "type": true,
	"deprecated": true, "urls": true, "digest": true, "created": true, "maintainers": true,
	"dependencies": true, "<<": true,
}

// keepKey tells the keys of keepKeys, matched case-insensitively like the decoder matches
// them (see canonicalKeys). Most keys are ASCII and are looked up lower-cased; Unicode folds
// a few other letters onto ASCII ones (ſ onto s, the Kelvin sign onto k), so other keys are
// compared one by one.
func keepKey(key []byte) bool {
	if keepKeys[string(key)] {
		return true
	}
	var lower [32]byte
	if len(key) > len(lower) {
		return false // longer than any spelling of a kept key
	}
	for i, c := range key {
		if c >= utf8.RuneSelf {
			for k := range keepKeys {
				if bytes.EqualFold(key, []byte(k)) {
					return true
				}
			}
			return false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return keepKeysLower[string(lower[:len(key)])]
}

// keepKeysLower is keepKeys in lower case.
var keepKeysLower = func() map[string]bool {
	m := make(map[string]bool, len(keepKeys))
	for k := range keepKeys {
		m[strings.ToLower(k)] = true
	}
	return m
}()

// filterChunk appends to dst the chunk of one chart with the fields outside keepKeys blanked.
// It works on entries written in block style, a "- " line starting each and its keys one
// per line at one indentation, and leaves anything else as it is. It reads best whole: one
// pass over the lines, a state machine whose transitions are all here.
func filterChunk(dst, chunk []byte) []byte {
	first := true
	seqIndent := -1 // indentation of the dashes of the chart's list
	mapIndent := -1 // indentation of the current entry's keys; -1: leave this entry alone
	pending := false
	skipping := false // blanking the lines of a dropped field
	for len(chunk) > 0 {
		line := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line = chunk[:i+1]
		}
		chunk = chunk[len(line):]
		if first {
			first = false
			if _, inline, ok := parseTopKey(line[indentOf(line):]); !ok || inline {
				return append(dst, append(line, chunk...)...) // a flow list: nothing to filter
			}
			dst = append(dst, line...)
			continue
		}
		ind := indentOf(line)
		rest := line[ind:]
		if isBlank(rest) || rest[0] == '#' {
			if skipping {
				dst = append(dst, '\n')
			} else {
				dst = append(dst, line...)
			}
			continue
		}
		if skipping {
			// A field's value is indented deeper than its key, except a list, which may
			// sit at the key's indentation.
			if ind > mapIndent || (ind == mapIndent && isDash(rest)) {
				dst = append(dst, '\n')
				continue
			}
			skipping = false
		}
		if seqIndent < 0 && isDash(rest) {
			seqIndent = ind
		}
		if seqIndent >= 0 && ind < seqIndent {
			return append(dst, append(line, chunk...)...) // not the shape filtered here
		}
		if ind == seqIndent && isDash(rest) {
			// A new entry: "- key: value", or "-" with the keys on the next lines.
			mapIndent, pending = -1, false
			k := 1
			for k < len(rest) && rest[k] == ' ' {
				k++
			}
			content := rest[k:]
			if isBlank(content) {
				pending = true
				dst = append(dst, line...)
				continue
			}
			key, ok := keyToFilter(content)
			if !ok {
				dst = append(dst, line...)
				continue
			}
			mapIndent = ind + k
			if keepKey(key) {
				dst = append(dst, line...)
				continue
			}
			dst = append(dst, line[:ind+1]...) // keep the dash, drop the field
			dst = append(dst, '\n')
			skipping = true
			continue
		}
		if pending {
			pending = false
			if ind > seqIndent {
				mapIndent = ind
			}
		}
		if mapIndent >= 0 && ind == mapIndent && !isDash(rest) {
			// A key; a dash here is an item of the previous field's list ("urls:\n- a").
			key, ok := keyToFilter(rest)
			switch {
			case !ok:
				mapIndent = -1 // something unusual: leave the rest of this entry alone
			case !keepKey(key):
				dst = append(dst, '\n')
				skipping = true
				continue
			}
		}
		dst = append(dst, line...)
	}
	return dst
}

// keyToFilter returns the key of a "key: value" line, and false when the line is anything
// else or when its value opens a quoted string it does not close: YAML parsers accept the
// continuation lines of such a string at any indentation, so the lines after it cannot be
// told apart from keys.
func keyToFilter(line []byte) ([]byte, bool) {
	key, v, ok := splitKey(line)
	if !ok || (len(v) > 0 && (v[0] == '"' || v[0] == '\'') && quotedEnd(v) < 0) {
		return nil, false
	}
	return key, true
}
