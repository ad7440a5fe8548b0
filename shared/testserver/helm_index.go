package testserver

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// largeIndexBase is the creation time of the newest version in a large index: fixed, so the
// same arguments always give the same bytes and benchmarks compare like with like.
var largeIndexBase = time.Date(2025, time.March, 1, 12, 0, 0, 123456789, time.UTC)

// largeIndexChanges is how many artifacthub.io/changes lines each version carries. Big public
// repositories owe most of their index size to such annotations; this many makes an entry
// about 3.5 KB, so 300 charts of 50 versions (15,000 entries) come to about 50 MiB.
const largeIndexChanges = 14

// WriteLargeIndex writes a valid, deterministic index.yaml of charts charts with
// versionsPerChart versions each, shaped like a big public repository's (annotations with a
// changelog and images, dependencies, a ~200 character description, home, icon, sources,
// keywords, maintainers, urls, created, digest), for benchmarks of index parsing and caching.
// It streams entry by entry and never holds the index in memory. Charts are named
// "chart-0000"…, versions "V.M.P" listed newest first as `helm repo index` does.
func WriteLargeIndex(w io.Writer, charts, versionsPerChart int) error {
	if charts < 0 || versionsPerChart < 0 {
		return fmt.Errorf("testserver: charts and versionsPerChart must not be negative")
	}
	// bufio keeps the first write error and returns it from every later call, so the
	// individual writes need no checks: Flush reports it.
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString("apiVersion: v1\nentries:\n")
	if charts == 0 || versionsPerChart == 0 {
		bw.WriteString("  {}\n")
	}
	for c := 0; c < charts; c++ {
		name := fmt.Sprintf("chart-%04d", c)
		if versionsPerChart > 0 {
			fmt.Fprintf(bw, "  %s:\n", name)
		}
		for v := versionsPerChart - 1; v >= 0; v-- {
			writeLargeIndexEntry(bw, name, c, v, versionsPerChart)
		}
	}
	fmt.Fprintf(bw, "generated: %q\n", largeIndexBase.Format(time.RFC3339Nano))
	return bw.Flush()
}

// writeLargeIndexEntry writes version number v (0 is the oldest) of chart number c.
func writeLargeIndexEntry(bw *bufio.Writer, name string, c, v, versionsPerChart int) {
	version := fmt.Sprintf("%d.%d.%d", v/100+1, (v/10)%10, v%10)
	appVersion := fmt.Sprintf("%d.%d.%d", v/20+2, v%20, c%7)
	sum := sha256.Sum256([]byte(name + "@" + version))
	digest := hex.EncodeToString(sum[:])
	// Newer versions are newer: one hour apart, charts one minute apart.
	age := time.Duration(versionsPerChart-1-v)*time.Hour + time.Duration(c)*time.Minute
	created := largeIndexBase.Add(-age).Format(time.RFC3339Nano)

	fmt.Fprintf(bw, "  - annotations:\n")
	fmt.Fprintf(bw, "      artifacthub.io/changes: |\n")
	for i := 0; i < largeIndexChanges; i++ {
		fmt.Fprintf(bw, "        - kind: changed\n          description: Update dependency %s-component-%02d to version %s (#%d)\n",
			name, i, appVersion, 10000+c*100+v*3+i)
	}
	fmt.Fprintf(bw, "      artifacthub.io/images: |\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(bw, "        - name: %s-image-%d\n          image: registry.example.com/sluice-charts/%s-image-%d:%s-debian-12-r%d\n",
			name, i, name, i, appVersion, v)
	}
	fmt.Fprintf(bw, "      artifacthub.io/license: Apache-2.0\n")
	fmt.Fprintf(bw, "      artifacthub.io/links: |\n        - name: Chart Source\n          url: https://github.com/example/charts/tree/main/charts/%s\n", name)
	fmt.Fprintf(bw, "      category: Infrastructure\n")
	fmt.Fprintf(bw, "    apiVersion: v2\n")
	fmt.Fprintf(bw, "    appVersion: %s\n", appVersion)
	fmt.Fprintf(bw, "    created: %q\n", created)
	fmt.Fprintf(bw, "    dependencies:\n")
	fmt.Fprintf(bw, "    - name: common\n      repository: oci://registry.example.com/sluice-charts\n      tags:\n      - sluice-common\n      version: 2.x.x\n")
	fmt.Fprintf(bw, "    - condition: redis.enabled\n      name: redis\n      repository: oci://registry.example.com/sluice-charts\n      version: 19.x.x\n")
	fmt.Fprintf(bw, "    description: %q\n", fmt.Sprintf(
		"%s is a synthetic chart in a very large repository index, generated to benchmark how a "+
			"source controller downloads, parses, caches and serves indexes of the size public Helm repositories reach (%s).",
		name, version))
	fmt.Fprintf(bw, "    digest: %s\n", digest)
	fmt.Fprintf(bw, "    home: https://charts.example.com/%s\n", name)
	fmt.Fprintf(bw, "    icon: https://charts.example.com/icons/%s-220x234.png\n", name)
	fmt.Fprintf(bw, "    keywords:\n    - %s\n    - infrastructure\n    - benchmark\n    - synthetic\n", name)
	fmt.Fprintf(bw, "    maintainers:\n    - email: maintainers@example.com\n      name: Example Maintainers\n      url: https://github.com/example/charts\n")
	fmt.Fprintf(bw, "    name: %s\n", name)
	fmt.Fprintf(bw, "    sources:\n    - https://github.com/example/charts/tree/main/charts/%s\n    - https://github.com/example/%s\n", name, name)
	fmt.Fprintf(bw, "    urls:\n    - https://charts.example.com/%s-%s.tgz\n", name, version)
	fmt.Fprintf(bw, "    version: %s\n", version)
}
