package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// archiveEntry is what a package says of one file.
type archiveEntry struct {
	Name     string
	Mode     int64
	Typeflag byte
	Data     string
	Time     time.Time `json:"-"`
}

// readPackage is a package's gzip header and entries, in order.
func readPackage(t *testing.T, data []byte) (gzip.Header, []archiveEntry) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var entries []archiveEntry
	tr := tar.NewReader(zr)
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return zr.Header, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, archiveEntry{Name: hd.Name, Mode: hd.Mode, Typeflag: hd.Typeflag, Data: string(body), Time: hd.ModTime})
	}
}

// TestSavePackageIsHelmsPackage holds savePackage to Helm's own chartutil.Save (what `helm
// package` writes): the same gzip header and the same entries in the same order, with the
// same modes and contents, for charts of both API versions, with a lock, a schema and
// subcharts. Only the entry times differ: packageTime here, the clock there.
func TestSavePackageIsHelmsPackage(t *testing.T) {
	build := func(spec testserver.ChartSpec) *helmchart.Chart {
		c, err := testserver.BuildChart(spec)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	withSubcharts := build(testserver.ChartSpec{Name: "app", Version: "1.0.0+abc",
		Files:        map[string]string{"values.schema.json": `{"type":"object"}`, "README.md": "# app", "templates/_helpers.tpl": "{{/* x */}}"},
		Dependencies: []*helmchart.Dependency{{Name: "lib", Version: "1.2.0"}, {Name: "db", Version: "2.0.0"}}})
	withSubcharts.Lock = &helmchart.Lock{Digest: "sha256:0", Dependencies: withSubcharts.Metadata.Dependencies}
	lib := build(testserver.ChartSpec{Name: "lib", Version: "1.2.0"})
	lib.AddDependency(build(testserver.ChartSpec{Name: "leaf", Version: "0.1.0"}))
	withSubcharts.SetDependencies(build(testserver.ChartSpec{Name: "db", Version: "2.0.0"}), lib)
	v1 := build(testserver.ChartSpec{Name: "legacy", Version: "0.9.0",
		Files:        map[string]string{"requirements.yaml": "dependencies:\n- name: lib\n  version: 1.2.0\n"},
		Dependencies: []*helmchart.Dependency{{Name: "lib", Version: "1.2.0"}}})
	v1.Metadata.APIVersion = helmchart.APIVersionV1
	v1.Lock = &helmchart.Lock{Digest: "sha256:1"} // not written for v1: requirements.lock is a file

	for name, c := range map[string]*helmchart.Chart{"v2 with lock, schema and subcharts": withSubcharts, "v1": v1} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var ours bytes.Buffer
			g.Expect(savePackage(c, &ours)).To(Succeed())
			helms, err := chartutil.Save(c, t.TempDir())
			g.Expect(err).NotTo(HaveOccurred())
			data, err := os.ReadFile(helms)
			g.Expect(err).NotTo(HaveOccurred())

			ourHeader, ourEntries := readPackage(t, ours.Bytes())
			helmHeader, helmEntries := readPackage(t, data)
			for i := range helmEntries {
				helmEntries[i].Time = packageTime
			}
			g.Expect(ourEntries).To(Equal(helmEntries), "the same entries, every time packageTime")
			g.Expect(ourHeader.Comment).To(Equal(helmHeader.Comment))
			g.Expect(ourHeader.Extra).To(Equal(helmHeader.Extra))
			g.Expect(ourHeader.OS).To(Equal(helmHeader.OS))
			g.Expect(len(ourEntries)).To(BeNumerically(">=", 4), "the chart has entries to compare")
		})
	}
}

// TestSavePackageRefuses: what Helm refuses to package is refused as the chart's error, and no
// file is left.
func TestSavePackageRefuses(t *testing.T) {
	g := NewWithT(t)
	c, err := testserver.BuildChart(testserver.ChartSpec{Name: "app", Version: "1.0.0"})
	g.Expect(err).NotTo(HaveOccurred())
	c.Schema = []byte("{not json")
	out := t.TempDir()
	lim := Limits{MaxChartSize: 1 << 20}
	_, err = writePackage(c, out, lim)
	g.Expect(err).To(MatchError(ErrChartLoad))
	g.Expect(err).To(MatchError(ContainSubstring("invalid JSON in values.schema.json")))

	c.Schema = nil
	c.Metadata.Version = "not a version"
	_, err = writePackage(c, out, lim)
	g.Expect(err).To(MatchError(ContainSubstring("chart validation")))

	c.Metadata.Version = "1.0.0"
	sub, err := testserver.BuildChart(testserver.ChartSpec{Name: "sub", Version: "1.0.0"})
	g.Expect(err).NotTo(HaveOccurred())
	sub.Metadata.Name = "../sub"
	c.SetDependencies(sub)
	_, err = writePackage(c, out, lim)
	g.Expect(err).To(MatchError(ContainSubstring("../sub")))
	entries, err := os.ReadDir(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "a refused chart leaves no file")
}
