package index

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// expectSameAsHelm resolves every chart of the index (and one that is not there) with every
// range, through Helm's repo.LoadIndexFile + Get on indexPath and through Resolve on the
// compact file, and checks that both give the same version, or both none.
func expectSameAsHelm(t *testing.T, indexPath, compactPath string, charts, ranges []string) {
	t.Helper()
	g := NewWithT(t)
	helmIdx, err := repo.LoadIndexFile(indexPath)
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range append(charts, "not-there") {
		for _, rng := range ranges {
			want, helmErr := helmIdx.Get(name, rng)
			got, err := Resolve(compactPath, name, rng)
			what := fmt.Sprintf("%s@%q", name, rng)
			if helmErr != nil {
				g.Expect(err).To(HaveOccurred(), "%s: helm: %v, sluice: %v", what, helmErr, got)
				if _, cerr := semver.NewConstraint(rng); rng != "" && cerr != nil {
					g.Expect(errors.Is(err, ErrInvalidRange)).To(BeTrue(), "%s: %v", what, err)
					continue
				}
				g.Expect(errors.Is(err, ErrChartNotFound)).To(BeTrue(), "%s: %v", what, err)
				g.Expect(err.Error()).To(Equal(fmt.Sprintf("no '%s' chart with version matching '%s' found", name, rng)))
				continue
			}
			g.Expect(err).NotTo(HaveOccurred(), "%s: helm gave %s", what, want.Version)
			g.Expect(got.Version).To(Equal(want.Version), what)
			g.Expect(got.URLs).To(Equal(want.URLs), what)
			g.Expect(got.Digest).To(Equal(want.Digest), what)
			g.Expect(got.Name).To(Equal(want.Name), what)
			g.Expect(got.AppVersion).To(Equal(want.AppVersion), what)
			g.Expect(got.APIVersion).To(Equal(want.APIVersion), what)
			g.Expect(got.Deprecated).To(Equal(want.Deprecated), what)
			g.Expect(got.Created.Equal(want.Created)).To(BeTrue(), "%s: created %v, helm %v", what, got.Created, want.Created)
		}
	}
}

func TestResolveMatchesHelm(t *testing.T) {
	quietHelmLog(t)
	charts := fixtureIndex()
	tests := []struct {
		name  string
		index []byte
	}{
		{name: "helm-style YAML", index: writeYAML(charts, yamlStyle{helm: true})},
		{name: "hand-written YAML", index: writeYAML(charts, yamlStyle{})},
		{name: "CRLF YAML", index: writeYAML(charts, yamlStyle{crlf: true})},
		{name: "JSON", index: writeJSON(charts)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			indexPath := writeFile(t, "index.yaml", tt.index)
			compact, _ := convertFile(t, tt.index)
			expectSameAsHelm(t, indexPath, compact, chartNames(charts), fixtureRanges)
		})
	}
}

// TestResolveMatchesHelmOtherShapes covers YAML the line splitter does not split (flow
// style, an indented root, entries in flow style) or splits at unusual places.
func TestResolveMatchesHelmOtherShapes(t *testing.T) {
	quietHelmLog(t)
	const entry = `{name: a, version: %q, urls: [%q], digest: d%d}`
	var flowEntries string
	for i, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1", "v1.1.0", "bad"} {
		if i > 0 {
			flowEntries += ", "
		}
		flowEntries += fmt.Sprintf(entry, v, "u-"+v, i)
	}
	tests := []struct {
		name   string
		index  string
		charts []string
	}{
		{
			name:   "flow document",
			index:  "{apiVersion: v1, entries: {a: [" + flowEntries + "]}}\n",
			charts: []string{"a"},
		},
		{
			name:   "indented root",
			index:  "  apiVersion: v1\n  entries:\n    a: [" + flowEntries + "]\n",
			charts: []string{"a"},
		},
		{
			name:   "flow entries on the next line",
			index:  "apiVersion: v1\nentries:\n  {a: [" + flowEntries + "],\n   b: []}\n",
			charts: []string{"a", "b"},
		},
		{
			name:   "flow lists per chart, comments and anchors inside a chart",
			index:  "apiVersion: v1\nentries:\n  # charts\n  a: [" + flowEntries + "]\n  b:\n    - &base {name: b, version: 1.0.0, urls: [x]}\n    - *base\n    - {name: b, version: 0.9.0, urls: [z]}\n  c: ~\n",
			charts: []string{"a", "b", "c"},
		},
		{
			name:   "entries before apiVersion, trailing keys",
			index:  "entries:\n   a:\n     - name: a\n       version: 3.0.0\n       urls: [x]\napiVersion: v1\ngenerated: 2024-01-01T00:00:00Z\n",
			charts: []string{"a"},
		},
		{
			name:   "multi-line plain and quoted scalars",
			index:  "apiVersion: v1\nentries:\n  a:\n  - name: a\n    description: a plain scalar\n      that goes on\n    home: \"a quoted one\n      that goes on\"\n    version: 1.0.0\n    urls:\n    - x\n",
			charts: []string{"a"},
		},
		{
			name:   "empty entries",
			index:  "apiVersion: v1\nentries:\n  {}\ngenerated: \"2024-01-01T00:00:00Z\"\n",
			charts: []string{"a"},
		},
		{
			name:   "byte order mark and document marker",
			index:  "\xef\xbb\xbf--- # an index\napiVersion: v1\nentries:\n  a:\n  - {name: a, version: 1.0.0, urls: [x]}\n",
			charts: []string{"a"},
		},
	}
	ranges := []string{"", "*", "1.x", ">=1.0.0-0", "v1.1.0", "1.1.0", "bad", "2.0.0-rc.1", "3.0.0", "0.9.0"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			indexPath := writeFile(t, "index.yaml", []byte(tt.index))
			compact, _ := convertFile(t, []byte(tt.index))
			expectSameAsHelm(t, indexPath, compact, tt.charts, ranges)
		})
	}
}

func TestResolveFields(t *testing.T) {
	g := NewWithT(t)
	compact, _ := convertFile(t, writeYAML(fixtureIndex(), yamlStyle{helm: true}))
	cv, err := Resolve(compact, "podinfo", "6.3.5")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("6.3.5"))
	g.Expect(cv.Deprecated).To(BeTrue())
	g.Expect(cv.APIVersion).To(Equal("v1"), "Helm's default for an entry without apiVersion")
	g.Expect(cv.Created.IsZero()).To(BeFalse())
	g.Expect(cv.URLs).To(HaveLen(2))

	cv, err = Resolve(compact, "podinfo", "6.3.7")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.AppVersion).To(Equal("tab here"), "sanitized as Helm does")

	cv, err = Resolve(compact, "podinfo", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("6.3.7"), "latest stable: prereleases 6.4.0-alpha.1 and 7.0.0-0 are skipped")
}

func TestResolveErrors(t *testing.T) {
	compact, _ := convertFile(t, writeYAML(fixtureIndex(), yamlStyle{helm: true}))
	good, err := os.ReadFile(compact)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		chart   string
		rng     string
		wantIs  error
		wantMsg string
	}{
		{name: "no chart", path: compact, chart: "nope", rng: "9.*", wantIs: ErrChartNotFound,
			wantMsg: "no 'nope' chart with version matching '9.*' found"},
		{name: "no version in range", path: compact, chart: "podinfo", rng: "9.*", wantIs: ErrChartNotFound,
			wantMsg: "no 'podinfo' chart with version matching '9.*' found"},
		{name: "only prereleases", path: compact, chart: "nginx", rng: "", wantIs: ErrChartNotFound,
			wantMsg: "no 'nginx' chart with version matching '' found"},
		{name: "no valid versions", path: compact, chart: "allinvalid", rng: "*", wantIs: ErrChartNotFound},
		{name: "no versions", path: compact, chart: "empty", rng: "*", wantIs: ErrChartNotFound},
		{name: "invalid range", path: compact, chart: "podinfo", rng: ">= one", wantIs: ErrInvalidRange},
		{name: "missing file", path: compact + ".missing", chart: "podinfo", wantIs: fs.ErrNotExist},
		{name: "raw index.yaml", path: writeFile(t, "index.yaml", writeYAML(fixtureIndex(), yamlStyle{helm: true})),
			chart: "podinfo", wantIs: ErrInvalidIndex, wantMsg: "not a compact index"},
		{name: "truncated", path: writeFile(t, "t.slx", good[:len(good)-1]), chart: "podinfo", wantIs: ErrInvalidIndex},
		{name: "empty file", path: writeFile(t, "e.slx", nil), chart: "podinfo", wantIs: ErrInvalidIndex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cv, err := Resolve(tt.path, tt.chart, tt.rng)
			g.Expect(err).To(HaveOccurred(), "got %+v", cv)
			g.Expect(errors.Is(err, tt.wantIs)).To(BeTrue(), "%v", err)
			if tt.wantMsg != "" {
				g.Expect(err.Error()).To(ContainSubstring(tt.wantMsg))
			}
		})
	}
}

// TestResolveCorruptNeverPanics flips every byte of a small compact index in turn: Resolve
// must answer with a version or an error, never panic or allocate without bound.
func TestResolveCorruptNeverPanics(t *testing.T) {
	g := NewWithT(t)
	idx := "apiVersion: v1\nentries:\n  a:\n  - {name: a, version: 1.0.0, urls: [x, y], digest: d, created: \"2024-01-01T00:00:00Z\"}\n  - {name: a, version: 1.1.0, urls: [z]}\n  b:\n  - {name: b, version: 2.0.0, urls: [w]}\n"
	var out bytes.Buffer
	_, err := Convert(bytes.NewReader([]byte(idx)), &out, 0)
	g.Expect(err).NotTo(HaveOccurred())
	good := out.Bytes()
	p := writeFile(t, "c.slx", nil)
	for i := range good {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= x
			g.Expect(os.WriteFile(p, bad, 0o644)).To(Succeed())
			for _, chart := range []string{"a", "b"} {
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("byte %d ^ %#x, chart %s: panic: %v", i, x, chart, r)
						}
					}()
					_, _ = Resolve(p, chart, "*")
				}()
			}
		}
	}
}
