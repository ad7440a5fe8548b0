package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// fxEntry is one version entry of a test index. The emitters below write it as Helm-style
// YAML, hand-written-style YAML or JSON, using only fields Helm's strict decoder accepts.
type fxEntry struct {
	null        bool // written as a null list item
	name        string
	version     string
	appVersion  string
	apiVersion  string
	chartType   string
	digest      string
	created     string
	deprecated  bool
	description string
	urls        []string
	depAlias    string // a dependency with this alias, when set
	nullMaint   bool   // a null maintainer
}

type fxChart struct {
	name    string
	entries []fxEntry
}

// fixtureIndex is the small index of the round-trip tests: a chart with many versions
// (prereleases, build metadata, "v" prefixes, ties, deprecated, invalid versions, entries
// Helm drops), listed in a shuffled order, and a few degenerate charts.
func fixtureIndex() []fxChart {
	rng := rand.New(rand.NewPCG(7, 11))
	var podinfo []fxEntry
	add := func(v string, mod func(*fxEntry)) {
		e := fxEntry{
			name:        "podinfo",
			version:     v,
			appVersion:  "app-" + v,
			apiVersion:  "v2",
			digest:      digest("podinfo", len(podinfo)),
			created:     fmt.Sprintf("2024-01-%02dT10:%02d:00.%09d+02:00", 1+len(podinfo)%28, len(podinfo)%60, len(podinfo)*7919),
			description: "Podinfo " + v + "\nline two: looks: like a key\n",
			urls:        []string{"https://charts.example.com/podinfo-" + v + ".tgz", "https://mirror.example.com/podinfo-" + v + ".tgz"},
		}
		if mod != nil {
			mod(&e)
		}
		podinfo = append(podinfo, e)
	}
	for major := 0; major <= 6; major++ {
		for minor := 0; minor <= 3; minor++ {
			for _, patch := range []int{0, 1, 3} {
				add(fmt.Sprintf("%d.%d.%d", major, minor, patch), nil)
			}
		}
	}
	for _, v := range []string{"6.1.0-rc.1", "6.1.0-rc.2", "6.4.0-alpha.1", "5.2.0-beta.1", "7.0.0-0", "0.0.1-0", "2.0.0-alpha"} {
		add(v, nil)
	}
	// Versions of equal precedence: Helm's unstable sort decides between them.
	for _, v := range []string{"5.1.4", "v5.1.4", "5.1.4+build.1", "5.1.4+build.2", "v5.1.4+build.3", "6.0.3+meta", "v6.0.1", "4.0.0+a", "4.0.0+b", "4.0.0"} {
		add(v, nil)
	}
	add("1.2", nil) // coerced to 1.2.0 by semver.NewVersion: valid for Helm
	add("6.2.5", func(e *fxEntry) { e.deprecated = true })
	add("6.3.5", func(e *fxEntry) { e.deprecated = true; e.apiVersion = "" })
	add("6.3.7", func(e *fxEntry) { e.chartType = "library"; e.appVersion = "tab\there\x01" })
	// Entries Helm drops when loading.
	add("latest", nil)
	add("1.0.0.0", nil)
	add("", nil)
	add("9.0.0", func(e *fxEntry) { e.name = "" })
	add("9.1.0", func(e *fxEntry) { e.chartType = "bogus" })
	add("9.2.0", func(e *fxEntry) { e.depAlias = "bad alias!" })
	add("9.3.0", func(e *fxEntry) { e.nullMaint = true })
	add("9.4.0", func(e *fxEntry) { e.name = "a/b" })
	podinfo = append(podinfo, fxEntry{null: true})
	rng.Shuffle(len(podinfo), func(i, j int) { podinfo[i], podinfo[j] = podinfo[j], podinfo[i] })

	simple := func(name string, versions ...string) fxChart {
		c := fxChart{name: name}
		for i, v := range versions {
			c.entries = append(c.entries, fxEntry{
				name: name, version: v, apiVersion: "v2", digest: digest(name, i),
				created: "2023-05-06T07:08:09Z", urls: []string{name + "-" + v + ".tgz"},
			})
		}
		return c
	}
	return []fxChart{
		{name: "podinfo", entries: podinfo},
		simple("nginx", "1.0.0-rc.1", "1.0.0-rc.2", "0.9.0-beta"),
		simple("my.chart", "0.1.0", "0.2.0", "0.10.0"),
		simple("allinvalid", "latest", "stable"),
		{name: "empty"},
		simple("zz-last", "3.0.0"),
	}
}

// digest returns a sha256 hex digest, as in real indexes. (A run of digits like
// "000…3e9" would not do: Helm's YAML 1.1 reads it unquoted as the float 3e+09.)
func digest(name string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(name, i)))
	return hex.EncodeToString(sum[:])
}

// fixtureRanges are the version ranges the round-trip tests resolve for every chart.
var fixtureRanges = []string{
	"", "*", "5.*", "~5.1", ">=1.0.0 <2.0.0", "9.*", "6.0.3", "6.0.3+meta", "v5.1.4", "5.1.4",
	"5.1.4+build.2", "v5.1.4+build.3", "=5.1.4", "~5.1.4", ">=6.1.0-0", "6.1.0-rc.1", "^6.1.0-rc.1",
	"^1.0.0-0", ">0.0.0-0", ">=0.0.0-0 <0.1.0", "<1.0.0", "1.x", "1.2", "1.2.0", "v6.0.1", "6.0.1",
	"4.0.0", "4.0.0+b", "5.1.4 || 6.0.1", "2.0.0-alpha", "6.3.5", "6.3.7", "6.2.5", "2.0.0-alpha - 2.0.0", ">=7.0.0-0",
	"0.10.0", "3.0.0", "1.0.0-rc.2", ">=1.0.0-rc.1", "latest", "!=6.3.7", "> 6.2",
}

// yamlStyle selects how writeYAML lays an index out.
type yamlStyle struct {
	// helm writes like `helm repo index`: lists at the indentation of their key, sorted keys.
	helm bool
	// crlf ends lines with \r\n.
	crlf bool
}

// writeYAML renders charts as an index.yaml.
func writeYAML(charts []fxChart, st yamlStyle) []byte {
	var b strings.Builder
	q := strconv.Quote
	if !st.helm {
		b.WriteString("---\n# A hand-written index.\n\n")
	}
	b.WriteString("apiVersion: v1\n")
	if !st.helm {
		b.WriteString("serverInfo:\n  contextPath: /charts\n")
		b.WriteString("annotations:\n  owner: sluice\n")
	}
	b.WriteString("entries:\n")
	for ci, c := range charts {
		// Chart names: plain in Helm style, quoted in every other one otherwise.
		key := c.name
		if !st.helm && ci%2 == 1 {
			key = q(c.name)
		}
		if len(c.entries) == 0 {
			fmt.Fprintf(&b, "  %s: []\n", key)
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", key)
		if !st.helm {
			b.WriteString("# a comment in column 0 inside entries\n\n")
		}
		dash, ind := "  - ", "    "
		if !st.helm {
			dash, ind = "    - ", "      "
		}
		for _, e := range c.entries {
			if e.null {
				b.WriteString(strings.TrimRight(dash, " ") + "\n")
				continue
			}
			first := true
			field := func(k, v string) {
				if first {
					b.WriteString(dash)
					first = false
				} else {
					b.WriteString(ind)
				}
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
			if e.apiVersion != "" {
				field("apiVersion", e.apiVersion)
			}
			if e.appVersion != "" {
				field("appVersion", q(e.appVersion))
			}
			if e.created != "" {
				if st.helm {
					field("created", q(e.created))
				} else {
					field("created", e.created) // a plain YAML timestamp
				}
			}
			if e.depAlias != "" {
				field("dependencies", "\n"+ind+"- name: dep\n"+ind+"  alias: "+q(e.depAlias))
				trimNewline(&b)
			}
			if e.deprecated {
				field("deprecated", "true")
			}
			if e.description != "" {
				if st.helm {
					field("description", q(e.description))
				} else {
					// A block scalar whose lines look like keys: indentation alone says
					// they are not.
					field("description", "|\n"+ind+"  "+strings.ReplaceAll(strings.TrimSuffix(e.description, "\n"), "\n", "\n"+ind+"  "))
				}
			}
			if e.digest != "" {
				field("digest", e.digest)
			}
			if e.nullMaint {
				field("maintainers", "\n"+ind+"- null")
				trimNewline(&b)
			}
			field("name", q(e.name))
			if e.chartType != "" {
				field("type", e.chartType)
			}
			if st.helm {
				field("urls", "")
				for _, u := range e.urls {
					fmt.Fprintf(&b, "%s- %s\n", ind, u)
				}
			} else {
				field("urls", "["+strings.Join(quoteAll(e.urls), ", ")+"]")
			}
			// Version strings: quoted, except plain where YAML keeps them strings anyway.
			if !st.helm && strings.HasPrefix(e.version, "v") {
				field("version", e.version)
			} else {
				field("version", q(e.version))
			}
		}
	}
	b.WriteString("generated: \"2024-02-03T04:05:06Z\"\n")
	if !st.helm {
		b.WriteString("publicKeys:\n- key-one\n- key-two\n...\nignored: [after, the, document\n")
	}
	out := b.String()
	// "urls: \n" from the helper above: Helm writes "urls:" with no trailing space.
	out = strings.ReplaceAll(out, "urls: \n", "urls:\n")
	if st.crlf {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return []byte(out)
}

func trimNewline(b *strings.Builder) {
	s := strings.TrimSuffix(b.String(), "\n")
	b.Reset()
	b.WriteString(s)
	b.WriteString("\n")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// writeJSON renders charts as the JSON form of an index, keeping the chart and entry order.
func writeJSON(charts []fxChart) []byte {
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
				b.WriteString(",\n")
			}
			if e.null {
				b.WriteString("null")
				continue
			}
			m := map[string]any{"name": e.name, "version": e.version, "urls": e.urls}
			set := func(k, v string) {
				if v != "" {
					m[k] = v
				}
			}
			set("apiVersion", e.apiVersion)
			set("appVersion", e.appVersion)
			set("created", e.created)
			set("digest", e.digest)
			set("description", e.description)
			set("type", e.chartType)
			if e.deprecated {
				m["deprecated"] = true
			}
			if e.depAlias != "" {
				m["dependencies"] = []any{map[string]any{"name": "dep", "alias": e.depAlias}}
			}
			if e.nullMaint {
				m["maintainers"] = []any{nil}
			}
			enc(m)
		}
		b.WriteString("]")
	}
	b.WriteString(`},"generated":"2024-02-03T04:05:06Z","serverInfo":{"contextPath":"/charts"}}`)
	return b.Bytes()
}

// writeFile writes b to a new file in t's temporary directory.
func writeFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// convertFile converts index bytes to a compact index file and returns its path.
func convertFile(t testing.TB, index []byte) (string, Stats) {
	t.Helper()
	g := NewWithT(t)
	var out bytes.Buffer
	st, err := Convert(bytes.NewReader(index), &out, 0)
	g.Expect(err).NotTo(HaveOccurred())
	return writeFile(t, "index.slx", out.Bytes()), st
}

// quietHelmLog silences the "skipping loading invalid entry" lines Helm logs while loading.
func quietHelmLog(t testing.TB) {
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
}

func chartNames(charts []fxChart) []string {
	names := make([]string, 0, len(charts))
	for _, c := range charts {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}
