package index

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestFilterChunk(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "helm style",
			in: `  podinfo:
  - annotations:
      a: |
        - kind: x
    apiVersion: v2
    description: "one line"
    keywords:
    - k1
    # a comment
    - k2
    name: podinfo
    urls:
    - u1
    version: 1.0.0
`,
			want: `  podinfo:
  -


    apiVersion: v2





    name: podinfo
    urls:
    - u1
    version: 1.0.0
`,
		},
		{
			name: "keys on the lines after a bare dash, flow entries",
			in: `  a:
    -
      home: h
      version: 2.0.0
    - {name: a, version: 3.0.0}
    - sources: [x,
        y]
      name: a
`,
			want: `  a:
    -

      version: 2.0.0
    - {name: a, version: 3.0.0}
    -

      name: a
`,
		},
		{
			name: "an unclosed quoted value stops filtering that entry",
			in: `  a:
  - name: a
    digest: "open
    quote"
    icon: i
  - icon: j
    name: a
`,
			want: `  a:
  - name: a
    digest: "open
    quote"
    icon: i
  -
    name: a
`,
		},
		{
			name: "a flow list is left alone",
			in:   "  a: [{name: a, icon: i}]\n",
			want: "  a: [{name: a, icon: i}]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(string(filterChunk(nil, []byte(tt.in)))).To(Equal(tt.want))
		})
	}
}

// TestFilterChangesNothing converts indexes with and without the field filter: the compact
// bytes must be identical, and on block-style indexes the filter must not have given up.
func TestFilterChangesNothing(t *testing.T) {
	var large bytes.Buffer
	if err := testserver.WriteLargeIndex(&large, 4, 12); err != nil {
		t.Fatal(err)
	}
	charts := fixtureIndex()
	tests := []struct {
		name          string
		index         []byte
		mayFallBack   bool
		wantFiltering bool
	}{
		{name: "helm-style fixture", index: writeYAML(charts, yamlStyle{helm: true})},
		{name: "hand-written fixture", index: writeYAML(charts, yamlStyle{})},
		{name: "CRLF fixture", index: writeYAML(charts, yamlStyle{crlf: true})},
		{name: "testserver large index", index: large.Bytes(), wantFiltering: true},
		{name: "a kept field refers to an anchor in a dropped one", mayFallBack: true, index: []byte(
			"apiVersion: v1\nentries:\n  a:\n  - home: &n a\n    name: *n\n    version: 1.0.0\n    urls: [x]\n  b: []\n")},
		{name: "an open quote on a kept key's line", index: []byte(
			"apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    urls: [x]\n    digest: \"a\n    icon: b\"\n  b: []\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			convert := func(filter bool) ([]byte, *converter) {
				defer func(old bool) { filterFields = old }(filterFields)
				filterFields = filter
				var out bytes.Buffer
				c := newConverter(&out)
				g.Expect(c.run(bytes.NewReader(tt.index), 0)).To(Succeed())
				return out.Bytes(), c
			}
			with, c := convert(true)
			without, _ := convert(false)
			g.Expect(with).To(Equal(without))
			if tt.mayFallBack {
				g.Expect(c.filterFallbacks).To(Equal(1))
			} else {
				g.Expect(c.filterFallbacks).To(BeZero())
			}
			if tt.wantFiltering {
				// Most of a big index's bytes are fields Convert does not read.
				chunk := tt.index[strings.Index(string(tt.index), "  chart-0000:"):strings.Index(string(tt.index), "  chart-0001:")]
				text := func(b []byte) int { return len(bytes.Join(bytes.Fields(b), nil)) }
				g.Expect(text(filterChunk(nil, chunk))).To(BeNumerically("<", text(chunk)/4), "text left by the filter")
				g.Expect(bytes.Count(filterChunk(nil, chunk), []byte("\n"))).To(Equal(bytes.Count(chunk, []byte("\n"))), "lines kept")
			}
		})
	}
}

// TestResolveMatchesHelmOnLargeIndexShape runs the round trip on a small index from the
// benchmark's generator, whose entries carry every field big repositories have.
func TestResolveMatchesHelmOnLargeIndexShape(t *testing.T) {
	quietHelmLog(t)
	var b bytes.Buffer
	if err := testserver.WriteLargeIndex(&b, 5, 30); err != nil {
		t.Fatal(err)
	}
	indexPath := writeFile(t, "index.yaml", b.Bytes())
	compact, st := convertFile(t, b.Bytes())
	NewWithT(t).Expect(st).To(Equal(Stats{Charts: 5, Versions: 150}))
	expectSameAsHelm(t, indexPath, compact, []string{"chart-0000", "chart-0004"},
		[]string{"", "*", "1.2.x", "~1.1.5", ">=1.0.0 <1.1.0", "1.2.9", "2.*"})
}
