package index

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	. "github.com/onsi/gomega"
)

func TestConvertRejectsBadIndexes(t *testing.T) {
	tests := []struct {
		name    string
		index   string
		maxSize int64
		wantIs  error
		wantMsg string // a substring of the error, with the line where YAML has one
	}{
		{name: "empty", index: "", wantIs: ErrInvalidIndex, wantMsg: "empty index"},
		{name: "only comments", index: "# nothing\n\n", wantIs: ErrInvalidIndex, wantMsg: "no apiVersion"},
		{name: "no apiVersion", index: "entries:\n  a:\n  - {name: a, version: 1.0.0}\n", wantIs: ErrInvalidIndex, wantMsg: "no apiVersion"},
		{name: "null apiVersion", index: "apiVersion:\nentries: {}\n", wantIs: ErrInvalidIndex, wantMsg: "no apiVersion"},
		{name: "no entries", index: "apiVersion: v1\ngenerated: \"2024-01-01T00:00:00Z\"\n", wantIs: ErrInvalidIndex, wantMsg: "no entries"},
		{name: "null entries", index: "apiVersion: v1\nentries:\ngenerated: x\n", wantIs: ErrInvalidIndex, wantMsg: "entries is null"},
		{name: "entries a list in column 0", index: "apiVersion: v1\nentries:\n- a\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 3: entries must map chart names to lists of versions, not be a list"},
		{name: "entries an indented list", index: "apiVersion: v1\nentries:\n  - a\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 3: entries must map chart names"},
		{name: "entries a string", index: "apiVersion: v1\nentries: nope\n", wantIs: ErrInvalidIndex,
			wantMsg: `line 2: entries must map chart names to lists of versions, found !!str "nope"`},
		{name: "root a list", index: "- a\n- b\n", wantIs: ErrInvalidIndex, wantMsg: "line 1: an index must be a mapping, found a list"},
		{name: "root a string", index: "hello\n", wantIs: ErrInvalidIndex, wantMsg: "an index must be a mapping"},
		{name: "apiVersion a mapping", index: "apiVersion:\n  v: 1\nentries: {}\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 2: apiVersion must be a string, found a mapping"},
		{name: "apiVersion twice", index: "apiVersion: v1\nentries: {}\napiVersion: v2\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 3: apiVersion is defined twice"},
		{name: "entries twice", index: "apiVersion: v1\nentries:\n  a: []\nentries:\n  b: []\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 4: entries is defined twice"},
		{name: "chart listed twice", index: "apiVersion: v1\nentries:\n  a: []\n  b: []\n  a: []\n", wantIs: ErrInvalidIndex,
			wantMsg: `line 5: chart "a" is listed twice in entries (first at line 3)`},
		{name: "chart versions a mapping", index: "apiVersion: v1\nentries:\n  a:\n    name: a\n    version: 1.0.0\n", wantIs: ErrInvalidIndex,
			wantMsg: `line 4: chart "a": expected a list of versions, found a mapping`},
		{name: "version entry a string", index: "apiVersion: v1\nentries:\n  a: []\n  b:\n  - b-1.0.0\n", wantIs: ErrInvalidIndex,
			wantMsg: `line 5: chart "b": a version entry must be a mapping, found !!str "b-1.0.0"`},
		{name: "urls a mapping", index: "apiVersion: v1\nentries:\n  a: []\n  b:\n  - name: b\n    version: 1.0.0\n    urls:\n      x: y\n", wantIs: ErrInvalidIndex,
			wantMsg: `chart "b": invalid helm repository index: line 8: cannot unmarshal !!map into []string`},
		{name: "deprecated not a bool", index: "apiVersion: v1\nentries:\n  a:\n  - name: a\n    deprecated: maybe\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 5: cannot unmarshal !!str `maybe` into bool"},
		{name: "created not a time", index: "apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    created: yesterday\n", wantIs: ErrInvalidIndex,
			wantMsg: `line 4: chart "a" version "1.0.0": created "yesterday" is not an RFC 3339 time`},
		{name: "bad indentation", index: "apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n   urls: [x]\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 5: did not find expected key"}, // yaml.v3 names the mapping's line
		{name: "unterminated quote", index: "apiVersion: v1\nentries:\n  a:\n  - name: \"a\n    version: 1.0.0\n  b: []\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 4"},
		{name: "unclosed flow list", index: "apiVersion: v1\nentries:\n  a:\n  - name: a\n    urls: [x, y\n  b: []\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 4: did not find expected ',' or ']'"},
		{name: "tab indentation", index: "apiVersion: v1\nentries:\n  a:\n  - name: a\n\tversion: 1.0.0\n", wantIs: ErrInvalidIndex,
			wantMsg: "found character that cannot start any token (in line 5)"},
		{name: "anchor from another chart", index: "apiVersion: v1\nentries:\n  a:\n  - &e {name: a, version: 1.0.0}\n  b:\n  - *e\n", wantIs: ErrInvalidIndex,
			wantMsg: "unknown anchor 'e'"},
		{name: "tab inside a chart", index: "apiVersion: v1\nentries:\n  a:\n  - name: a\n    version:\t\t@x\n  b: []\n", wantIs: ErrInvalidIndex,
			wantMsg: "line 5: found character that cannot start any token"},
		{name: "bad top-level YAML", index: "apiVersion: v1\nentries: {}\nserverInfo: [a\n", wantIs: ErrInvalidIndex, wantMsg: "line 3: did not find expected ',' or ']'"},

		{name: "JSON syntax", index: `{"apiVersion": "v1", "entries": {"a": [}}`, wantIs: ErrInvalidIndex, wantMsg: "JSON offset"},
		{name: "JSON version a number", index: `{"apiVersion":"v1","entries":{"a":[{"name":"a","version":1}]}}`, wantIs: ErrInvalidIndex,
			wantMsg: `chart "a": invalid helm repository index: JSON offset 58: version must be string, found number`},
		{name: "JSON entries a list", index: `{"apiVersion":"v1","entries":[]}`, wantIs: ErrInvalidIndex, wantMsg: "offset 30: entries must map chart names"},
		{name: "JSON apiVersion a number", index: `{"apiVersion":1,"entries":{}}`, wantIs: ErrInvalidIndex, wantMsg: "apiVersion must be a string"},
		{name: "JSON chart twice", index: `{"apiVersion":"v1","entries":{"a":[],"a":[]}}`, wantIs: ErrInvalidIndex, wantMsg: `chart "a" is listed twice`},
		{name: "JSON truncated", index: `{"apiVersion":"v1","entries":{"a":[`, wantIs: ErrInvalidIndex, wantMsg: "JSON ends early"},
		{name: "JSON trailing data", index: `{"apiVersion":"v1","entries":{}} {}`, wantIs: ErrInvalidIndex, wantMsg: "data after the index object"},
		{name: "JSON no entries", index: `{"apiVersion":"v1"}`, wantIs: ErrInvalidIndex, wantMsg: "no entries"},

		{name: "YAML over maxSize", index: "apiVersion: v1\nentries: {}\n", maxSize: 10, wantIs: ErrIndexTooLarge, wantMsg: "more than 10 bytes"},
		{name: "YAML one byte over maxSize", index: "apiVersion: v1\nentries: {}\n", maxSize: 26, wantIs: ErrIndexTooLarge},
		{name: "JSON over maxSize", index: `{"apiVersion":"v1","entries":{}}`, maxSize: 31, wantIs: ErrIndexTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Convert(strings.NewReader(tt.index), io.Discard, tt.maxSize)
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, tt.wantIs)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMsg))
		})
	}
}

func TestConvertMaxSizeIsInclusive(t *testing.T) {
	for _, index := range []string{"apiVersion: v1\nentries: {}\n", `{"apiVersion":"v1","entries":{}}`} {
		g := NewWithT(t)
		_, err := Convert(strings.NewReader(index), io.Discard, int64(len(index)))
		g.Expect(err).NotTo(HaveOccurred())
	}
}

func TestConvertReportsReadErrors(t *testing.T) {
	g := NewWithT(t)
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("apiVersion: v1\nentries:\n  a:\n  - name: a\n"), iotest.ErrReader(boom))
	_, err := Convert(r, io.Discard, 0)
	g.Expect(errors.Is(err, boom)).To(BeTrue(), "%v", err)
	g.Expect(errors.Is(err, ErrInvalidIndex)).To(BeFalse())
}

func TestConvertStats(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	st, err := Convert(bytes.NewReader(writeYAML(fixtureIndex(), yamlStyle{helm: true})), &out, 0)
	g.Expect(err).NotTo(HaveOccurred())
	// podinfo: 84 + 7 prereleases + 10 ties + "1.2" + 3 specials kept; "latest", "1.0.0.0", "",
	// no name, bad type, bad alias, null maintainer, "a/b" and a null entry skipped. nginx 3,
	// my.chart 3, zz-last 1; allinvalid skips 2; empty has none.
	g.Expect(st).To(Equal(Stats{Charts: 6, Versions: 105 + 3 + 3 + 1, SkippedVersions: 9 + 2}))
}

// TestConvertDeterministic converts the same index twice, and the same index in four
// different encodings: the compact bytes must be identical every time.
func TestConvertDeterministic(t *testing.T) {
	g := NewWithT(t)
	charts := fixtureIndex()
	inputs := map[string][]byte{
		"helm YAML": writeYAML(charts, yamlStyle{helm: true}),
		"hand YAML": writeYAML(charts, yamlStyle{}),
		"CRLF YAML": writeYAML(charts, yamlStyle{helm: true, crlf: true}),
		"JSON":      writeJSON(charts),
	}
	convert := func(b []byte) []byte {
		var out bytes.Buffer
		_, err := Convert(bytes.NewReader(b), &out, 0)
		g.Expect(err).NotTo(HaveOccurred())
		return out.Bytes()
	}
	want := convert(inputs["helm YAML"])
	g.Expect(convert(inputs["helm YAML"])).To(Equal(want), "second conversion")
	for name, in := range inputs {
		g.Expect(convert(in)).To(Equal(want), name)
	}
}

// TestConvertSplitsPerChart guards the memory bound: block-style indexes, Helm's and
// hand-written ones, must be decoded one chart at a time, never whole.
func TestConvertSplitsPerChart(t *testing.T) {
	charts := fixtureIndex()
	var podinfo fxChart
	for _, c := range charts {
		if c.name == "podinfo" {
			podinfo = c
		}
	}
	for _, st := range []yamlStyle{{helm: true}, {}, {crlf: true}} {
		g := NewWithT(t)
		in := writeYAML(charts, st)
		c := newConverter(io.Discard)
		g.Expect(c.run(bytes.NewReader(in), 0)).To(Succeed())
		g.Expect(c.entriesWhole).To(BeFalse())
		// The largest piece decoded at once is podinfo's list, the biggest chart.
		alone := writeYAML([]fxChart{podinfo}, st)
		g.Expect(c.largestChunk).To(BeNumerically("<", len(alone)))
		g.Expect(c.largestChunk).To(BeNumerically(">", len(alone)/2))
	}
}
