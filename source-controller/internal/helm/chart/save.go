package chart

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"path"

	"helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// The names a chart archive gives its parts, as Helm's chartutil names them.
const (
	chartFile   = "Chart.yaml"
	lockFile    = "Chart.lock"
	valuesFile  = "values.yaml"
	schemaFile  = "values.schema.json"
	subchartDir = "charts"
)

// helmGzipExtra is the extra field of the gzip header `helm package` writes (an "rr" subfield
// of 40 bytes). Loaders ignore it; it is kept so a package built here has the same bytes, hence
// the same digest, as one built by chartutil.Save and normalised, which this replaces.
var helmGzipExtra = []byte("rr\x28\x00aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=")

// savePackage writes c as a gzipped tar to w, in one pass: the entries, their order, modes and
// contents, and the gzip header of Helm's chartutil.Save (what `helm package` writes), with
// every entry time packageTime. chartutil itself is not linked: its package compiles JSON
// meta-schemas when the process starts (1.5 MB of heap kept for the process's life), for
// values validation a source-controller never does, and it writes to a file this package
// would read back to normalise.
func savePackage(c *helmchart.Chart, w io.Writer) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("chart validation: %w", err)
	}
	zw, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	zw.Extra = helmGzipExtra
	zw.Comment = "Helm"
	tw := tar.NewWriter(zw)
	if err := writeChart(tw, c, ""); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// writeChart writes c's entries under prefix/<name>/, then those of its subcharts under
// prefix/<name>/charts/, in chartutil.Save's order: Chart.yaml, Chart.lock, values.yaml,
// values.schema.json, templates, other files.
func writeChart(tw *tar.Writer, c *helmchart.Chart, prefix string) error {
	if path.Base(c.Name()) != c.Name() {
		return common.ErrInvalidChartName{Name: c.Name()}
	}
	base := path.Join(prefix, c.Name())
	meta, err := chartYAML(c.Metadata)
	if err != nil {
		return err
	}
	entries := []*common.File{{Name: chartFile, Data: meta}}
	if c.Metadata.APIVersion == helmchart.APIVersionV2 && c.Lock != nil {
		lock, err := yaml.Marshal(c.Lock)
		if err != nil {
			return err
		}
		entries = append(entries, &common.File{Name: lockFile, Data: lock})
	}
	for _, f := range c.Raw {
		if f.Name == valuesFile {
			entries = append(entries, f)
		}
	}
	if c.Schema != nil {
		if !json.Valid(c.Schema) {
			return fmt.Errorf("invalid JSON in %s", schemaFile)
		}
		entries = append(entries, &common.File{Name: schemaFile, Data: c.Schema})
	}
	entries = append(entries, c.Templates...)
	entries = append(entries, c.Files...)
	for _, f := range entries {
		hd := &tar.Header{Name: path.Join(base, f.Name), Mode: 0o644, Size: int64(len(f.Data)), ModTime: packageTime}
		if err := tw.WriteHeader(hd); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	for _, dep := range c.Dependencies() {
		if err := writeChart(tw, dep, path.Join(base, subchartDir)); err != nil {
			return err
		}
	}
	return nil
}

// chartYAML is Chart.yaml for metadata: an apiVersion v1 chart keeps its dependencies in
// requirements.yaml, one of its files, not in Chart.yaml.
func chartYAML(m *helmchart.Metadata) ([]byte, error) {
	if m.APIVersion == helmchart.APIVersionV1 {
		v1 := *m
		v1.Dependencies = nil
		m = &v1
	}
	return yaml.Marshal(m)
}
