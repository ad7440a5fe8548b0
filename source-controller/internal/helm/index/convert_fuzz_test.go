package index

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// FuzzConvert converts arbitrary bytes as an index.yaml (or its JSON form). A refusal wraps
// ErrInvalidIndex; an accepted index gives a compact index that opens and resolves every chart
// it lists without error, and, when Helm's own loader accepts the index too, resolves the
// latest version of every chart exactly as Helm does.
func FuzzConvert(f *testing.F) {
	f.Add(writeYAML(fixtureIndex()[1:], yamlStyle{helm: true}))
	f.Add(writeYAML(fixtureIndex()[1:], yamlStyle{}))
	f.Add(writeYAML(fixtureIndex()[1:3], yamlStyle{crlf: true}))
	f.Add(writeJSON(fixtureIndex()[1:]))
	for _, s := range []string{
		"{apiVersion: v1, entries: {a: [{name: a, version: 1.0.0, urls: [u]}]}}\n",
		"  apiVersion: v1\n  entries:\n    a: [{name: a, version: \"1.0.0\", urls: [x]}]\n",
		"apiVersion: v1\nentries:\n  {a: [{name: a, version: 1.0.0}],\n   b: []}\n",
		"apiVersion: v1\nentries:\n  a:\n    - &base {name: a, version: 1.0.0, urls: [x]}\n    - *base\n  c: ~\n",
		"entries:\n   a:\n     - name: a\n       version: 3.0.0\n       urls: [x]\napiVersion: v1\ngenerated: 2024-01-01T00:00:00Z\n",
		"apiVersion: v1\nentries:\n  a:\n  - name: a\n    description: a plain scalar\n      that goes on\n    version: 1.0.0\n",
		"apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    created: yesterday\n",
		"apiVersion: v1\nentries:\n  a: []\n  a: []\n",
		"apiVersion: v1\nentries: null\n",
		"\xef\xbb\xbfapiVersion: v1\nentries: {}\n",
		"apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.10\n    dependencies:\n    - name: d\n      alias: \"bad alias!\"\n",
		`{"apiVersion":"v1","entries":{"a":[{"name":"a","version":1}]}}`,
		`{"apiVersion":"v1","entries":{"a":[null,{"name":"a","version":"v1.2","maintainers":[null]}]}} {}`,
		"apiVersion: v1\nentries:\n  a:\n  - !!map {name: a, version: 1.0.0}\n",
		// Keys are matched case-insensitively, as Helm's encoding/json does.
		"apiVersion: v1\nentries:\n  a:\n  - Name: a\n    VERSION: 1.0.0\n    urlS: [x]\n  - name: a\n    version: 2.0.0\n    dependencies:\n    - name: d\n      ALIAS: \"bad alias!\"\n",
		"apiVersion: v1\nentries:\n  a:\n  - &e {name: a, Version: 1.0.0, Digest: d1}\n  - {<<: *e, verſion: 2.0.0}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	indexPath := filepath.Join(dir, "index.yaml")
	compactPath := filepath.Join(dir, "index.slx")
	quietHelmLog(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8192 {
			return
		}
		var out bytes.Buffer
		_, err := Convert(bytes.NewReader(data), &out, 0)
		if err != nil {
			if !errors.Is(err, ErrInvalidIndex) {
				t.Fatalf("error without ErrInvalidIndex: %v", err)
			}
			return
		}
		if err := os.WriteFile(compactPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		ix, err := Open(compactPath)
		if err != nil {
			t.Fatalf("the compact index of an accepted index does not open: %v", err)
		}
		for i := range ix.table.n {
			name, err := ix.table.name(i)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ix.Resolve(string(name), ""); err != nil && !errors.Is(err, ErrChartNotFound) {
				t.Fatalf("resolving %q: %v", name, err)
			}
		}

		if err := os.WriteFile(indexPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		helmIdx, err := repo.LoadIndexFile(indexPath)
		if err != nil {
			return // what Helm refuses has no answer to compare with
		}
		for name := range helmIdx.Entries {
			want, helmErr := helmIdx.Get(name, "")
			got, err := ix.Resolve(name, "")
			switch {
			case helmErr != nil && err == nil:
				t.Fatalf("%q: Helm finds no version, Resolve gives %s", name, got.Version)
			case helmErr == nil && err != nil:
				t.Fatalf("%q: Helm gives %s, Resolve fails: %v", name, want.Version, err)
			case err == nil && (got.Version != want.Version || got.Digest != want.Digest || !slices.Equal(got.URLs, want.URLs)):
				t.Fatalf("%q: Resolve gives %s %s %v, Helm %s %s %v", name, got.Version, got.Digest, got.URLs, want.Version, want.Digest, want.URLs)
			}
		}
	})
}

// FuzzConvertYAMLJSON writes one index, made of fuzzed field values, as YAML in Helm's style,
// as hand-written YAML with quoted keys and flow lists, and as JSON: the three conversions must
// agree, both in whether they succeed and byte for byte in the compact index.
func FuzzConvertYAMLJSON(f *testing.F) {
	f.Add("podinfo", "6.0.3", "v6.0.4-rc.1", "6.0.3", "v2", "application", "2024-01-01T10:00:00.123+02:00", "sha256:abc", "https://charts.example.com/podinfo-6.0.3.tgz", "", false)
	f.Add("my.chart", "1.2", "1.2.0+build.1", "app\tversion\x01", "", "library", "", "", "my.chart-1.2.tgz", "alias_1", true)
	f.Add("a/b", "latest", "", "", "v1", "bogus", "2023-05-06T07:08:09Z", "", "", "bad alias!", false)
	f.Add("é \"quoted\" #x: y", "1.0.0-0", "1.0.0", "\u00a0nbsp", "v2", "", "yesterday", "d", "u\nv", "", false)
	f.Add("..", "0.0.1", "v0.0.1", "", "", "", "", "", "", "", false)
	f.Fuzz(func(t *testing.T, name, version, version2, appVersion, apiVersion, chartType, created, digest, url, alias string, deprecated bool) {
		fields := []string{name, version, version2, appVersion, apiVersion, chartType, created, digest, url, alias}
		total := 0
		for _, s := range fields {
			// YAML and JSON cannot carry the same bytes that are not UTF-8: JSON replaces them.
			if !utf8.ValidString(s) {
				return
			}
			total += len(s)
		}
		if total > 2048 {
			return
		}
		entry := func(v string) fuzzIndexEntry {
			return fuzzIndexEntry{name: name, version: v, appVersion: appVersion, apiVersion: apiVersion, chartType: chartType,
				created: created, digest: digest, urls: []string{url}, alias: alias, deprecated: deprecated}
		}
		charts := []fuzzIndexChart{
			{name: name, entries: []fuzzIndexEntry{entry(version), entry(version2)}},
			{name: "zz-other", entries: []fuzzIndexEntry{{name: "zz-other", version: "1.0.0", urls: []string{"x.tgz"}}}},
		}
		type result struct {
			out   []byte
			stats Stats
			err   error
		}
		var results []result
		for _, index := range [][]byte{fuzzIndexYAML(charts, true), fuzzIndexYAML(charts, false), fuzzIndexJSON(charts)} {
			var out bytes.Buffer
			st, err := Convert(bytes.NewReader(index), &out, 0)
			results = append(results, result{out.Bytes(), st, err})
		}
		for i, r := range results[1:] {
			first := results[0]
			if (first.err == nil) != (r.err == nil) {
				t.Fatalf("form %d: error %v, Helm-style YAML: %v", i+1, r.err, first.err)
			}
			if first.err == nil && (!bytes.Equal(first.out, r.out) || first.stats != r.stats) {
				t.Fatalf("form %d converts differently from Helm-style YAML: %+v, %+v", i+1, r.stats, first.stats)
			}
		}
	})
}

type fuzzIndexEntry struct {
	name, version, appVersion, apiVersion, chartType, created, digest, alias string
	urls                                                                     []string
	deprecated                                                               bool
}

type fuzzIndexChart struct {
	name    string
	entries []fuzzIndexEntry
}

// fields lists an entry's fields in the order of Helm's YAML (sorted), left out when empty.
func (e fuzzIndexEntry) fields() [][2]any {
	var out [][2]any
	add := func(k string, v any) { out = append(out, [2]any{k, v}) }
	if e.apiVersion != "" {
		add("apiVersion", e.apiVersion)
	}
	if e.appVersion != "" {
		add("appVersion", e.appVersion)
	}
	if e.created != "" {
		add("created", e.created)
	}
	if e.alias != "" {
		add("dependencies", []map[string]string{{"name": "dep", "alias": e.alias}})
	}
	if e.deprecated {
		add("deprecated", true)
	}
	if e.digest != "" {
		add("digest", e.digest)
	}
	add("name", e.name)
	if e.chartType != "" {
		add("type", e.chartType)
	}
	add("urls", e.urls)
	add("version", e.version)
	return out
}

// yamlQuote writes s as a YAML double-quoted scalar: Go's escapes (\t, \x01, \u00a0...) are
// also YAML's, for valid UTF-8.
func yamlQuote(s string) string { return strconv.Quote(s) }

// fuzzIndexYAML writes charts as block-style YAML like `helm repo index` (helm true), or with
// quoted chart keys, deeper indentation and flow lists, like a hand-written index.
func fuzzIndexYAML(charts []fuzzIndexChart, helm bool) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	keyInd, dash, ind := "  ", "  - ", "    "
	if !helm {
		keyInd, dash, ind = "   ", "     - ", "       "
	}
	for _, c := range charts {
		fmt.Fprintf(&b, "%s%s:\n", keyInd, yamlQuote(c.name))
		for _, e := range c.entries {
			for i, kv := range e.fields() {
				prefix := ind
				if i == 0 {
					prefix = dash
				}
				k := kv[0].(string)
				switch v := kv[1].(type) {
				case string:
					fmt.Fprintf(&b, "%s%s: %s\n", prefix, k, yamlQuote(v))
				case bool:
					fmt.Fprintf(&b, "%s%s: %t\n", prefix, k, v)
				case []string:
					quoted := make([]string, len(v))
					for i, s := range v {
						quoted[i] = yamlQuote(s)
					}
					if helm {
						fmt.Fprintf(&b, "%s%s:\n", prefix, k)
						for _, s := range quoted {
							fmt.Fprintf(&b, "%s- %s\n", ind, s)
						}
					} else {
						fmt.Fprintf(&b, "%s%s: [%s]\n", prefix, k, strings.Join(quoted, ", "))
					}
				case []map[string]string:
					fmt.Fprintf(&b, "%s%s:\n%s- name: %s\n%s  alias: %s\n", prefix, k, ind, yamlQuote(v[0]["name"]), ind, yamlQuote(v[0]["alias"]))
				}
			}
		}
	}
	b.WriteString("generated: \"2024-02-03T04:05:06Z\"\n")
	return []byte(b.String())
}

// fuzzIndexJSON writes charts as the JSON form of an index, keeping the order of charts and
// fields.
func fuzzIndexJSON(charts []fuzzIndexChart) []byte {
	var b bytes.Buffer
	enc := func(v any) {
		j, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		b.Write(j)
	}
	b.WriteString(`{"apiVersion":"v1","entries":{`)
	for ci, c := range charts {
		if ci > 0 {
			b.WriteString(",")
		}
		enc(c.name)
		b.WriteString(":[")
		for ei, e := range c.entries {
			if ei > 0 {
				b.WriteString(",")
			}
			b.WriteString("{")
			for i, kv := range e.fields() {
				if i > 0 {
					b.WriteString(",")
				}
				enc(kv[0])
				b.WriteString(":")
				enc(kv[1])
			}
			b.WriteString("}")
		}
		b.WriteString("]")
	}
	b.WriteString(`},"generated":"2024-02-03T04:05:06Z"}`)
	return b.Bytes()
}
