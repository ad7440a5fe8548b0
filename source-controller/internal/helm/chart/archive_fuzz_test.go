package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"path"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// FuzzLoadArchive loads chart archives made of a fuzzed Chart.yaml, values.yaml and template,
// one extra entry of any name and type, and optionally the same chart again as a vendored
// subchart archive. Building the gzipped tar here lets the fuzzer work on names and contents
// rather than on compressed bytes. Errors are always ErrChartLoad or ErrTooLarge; an accepted
// archive names only files inside the chart, and Helm's own loader, which the artifact's
// consumers use, accepts it too.
func FuzzLoadArchive(f *testing.F) {
	const chartYAML = "apiVersion: v2\nname: podinfo\nversion: 6.0.3\n"
	for _, s := range []struct {
		chartYAML, values, template, name, body string
		typ                                     byte
		sub                                     bool
	}{
		{chartYAML, "replicaCount: 1\n", "kind: ConfigMap\n", "podinfo/values-prod.yaml", "replicaCount: 3\n", tar.TypeReg, false},
		{chartYAML, "a: 1\n", "{{ .Values.a }}", "podinfo/charts/", "", tar.TypeDir, true},
		{chartYAML, "", "", "../x", "x", tar.TypeReg, false},
		{chartYAML, "", "", "evil/../../x", "x", tar.TypeReg, false},
		{chartYAML, "", "", `evil\..\..\x`, "x", tar.TypeReg, false},
		{chartYAML, "", "", "/etc/passwd", "x", tar.TypeReg, false},
		{chartYAML, "", "", "c:/x", "x", tar.TypeReg, false},
		{chartYAML, "", "", "Chart.yaml", "x", tar.TypeReg, false},
		{chartYAML, "", "", "podinfo/templates/cm.yaml", "/etc/passwd", tar.TypeSymlink, false},
		{chartYAML, "", "", "podinfo/templates/cm.yaml", "podinfo/values.yaml", tar.TypeLink, false},
		{chartYAML, "", "", "podinfo/fifo", "", tar.TypeFifo, false},
		{chartYAML, "", "", "podinfo/..data", "x", tar.TypeReg, false},
		{chartYAML, "", "", "podinfo/a..b", "dots are fine", tar.TypeReg, true},
		{chartYAML, "", "", "./Chart.yaml", chartYAML, tar.TypeReg, false},
		{"\xef\xbb\xbf" + chartYAML + "dependencies:\n- name: podinfo\n  version: 6.0.3\n", "", "", "podinfo/requirements.yaml", "dependencies: []\n", tar.TypeReg, true},
		{"apiVersion: v1\nname: x\nversion: 1\n", "- not a map\n", "", "podinfo/.helmignore", "*.txt\n", tar.TypeReg, false},
		{"name: [\n", "", "", "podinfo/values.schema.json", "{\"type\": \"object\"}", tar.TypeReg, false},
	} {
		f.Add(s.chartYAML, s.values, s.template, s.name, s.body, s.typ, s.sub)
	}
	f.Fuzz(func(t *testing.T, chartYAML, values, template, name, body string, typ byte, sub bool) {
		if len(chartYAML)+len(values)+len(template)+len(name)+len(body) > 4096 {
			return
		}
		entries := []fuzzEntry{
			{name: "podinfo/Chart.yaml", body: chartYAML, typ: tar.TypeReg},
			{name: "podinfo/values.yaml", body: values, typ: tar.TypeReg},
			{name: "podinfo/templates/t.yaml", body: template, typ: tar.TypeReg},
			{name: name, body: body, typ: typ},
		}
		data, ok := fuzzArchive(entries)
		if !ok {
			return
		}
		if sub {
			entries = append(entries, fuzzEntry{name: "podinfo/charts/sub.tgz", body: string(data), typ: tar.TypeReg})
			if data, ok = fuzzArchive(entries); !ok {
				return
			}
		}
		lim := Limits{MaxChartSize: 1 << 16, MaxFileSize: 1 << 14}
		c, err := loadArchive(data, newBudget(lim))
		if err != nil {
			if !errors.Is(err, ErrChartLoad) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		files, err := readArchive(data, newBudget(lim))
		if err != nil {
			t.Fatalf("loadArchive accepts what readArchive refuses: %v", err)
		}
		for _, f := range files {
			if f.Name != path.Clean(f.Name) || path.IsAbs(f.Name) || f.Name == ".." || strings.HasPrefix(f.Name, "../") ||
				strings.ContainsRune(f.Name, '\\') {
				t.Fatalf("chart file %q is not a clean name inside the chart", f.Name)
			}
		}
		if c.Name() == "" || c.Metadata.Version == "" {
			t.Fatalf("loaded a chart without name or version: %+v", c.Metadata)
		}
		if _, err := loader.LoadArchive(bytes.NewReader(data)); err != nil {
			t.Fatalf("accepted an archive Helm's loader refuses: %v", err)
		}
	})
}

type fuzzEntry struct {
	name, body string
	typ        byte
}

// fuzzArchive writes entries as a gzipped tar; false when archive/tar cannot write a header.
func fuzzArchive(entries []fuzzEntry) ([]byte, bool) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Typeflag: e.typ, Name: e.name, Mode: 0o644}
		switch e.typ {
		case tar.TypeReg:
			hdr.Size = int64(len(e.body))
		case tar.TypeSymlink, tar.TypeLink:
			hdr.Linkname = e.body
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, false
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				return nil, false
			}
		}
	}
	if tw.Close() != nil || zw.Close() != nil {
		return nil, false
	}
	return buf.Bytes(), true
}
