package chart_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// podinfo is the chart most tests pull: nested values to check deep merges, and extra values
// files inside the chart.
func podinfo(version string) testserver.ChartSpec {
	return testserver.ChartSpec{
		Name:    "podinfo",
		Version: version,
		Values: map[string]any{
			"replicaCount": 1,
			"image":        map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.0.3"},
			"ingress":      map[string]any{"enabled": false, "hosts": []any{"a.example"}},
		},
		Files: map[string]string{
			"values-prod.yaml": "replicaCount: 3\nimage:\n  tag: 6.0.4\n  pullPolicy: Always\ningress:\n  hosts: [b.example, c.example]\n",
			"values-eu.yaml":   "image:\n  pullPolicy: IfNotPresent\nregion: eu\n",
			"values-bad.yaml":  "- not\n- a map\n",
		},
	}
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// loadChart loads a written package with Helm's own loader, as a consumer of the artifact does.
func loadChart(t *testing.T, name string) *helmchart.Chart {
	t.Helper()
	c, err := loader.LoadFile(name)
	if err != nil {
		t.Fatalf("loading %s with helm's loader: %v", name, err)
	}
	return c
}

func randomString(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// tarEntry is one entry of a hand-crafted archive.
type tarEntry struct {
	name, body, link string
	typ              byte
}

// craftArchive writes entries as a gzipped tar, without any of the checks chartutil.Save does.
func craftArchive(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Typeflag: typ, Name: e.name, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// validEntries are the files of a minimal valid chart named evil.
func validEntries() []tarEntry {
	return []tarEntry{
		{name: "evil/Chart.yaml", body: "apiVersion: v2\nname: evil\nversion: 1.0.0\n"},
		{name: "evil/values.yaml", body: "a: 1\n"},
	}
}

// serve drops data into the repository's root and returns its URL.
func serve(t *testing.T, repo *testserver.HelmRepository, name string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo.Root(), name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return repo.URL() + "/" + name
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
