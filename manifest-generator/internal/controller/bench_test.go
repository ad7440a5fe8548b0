package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testenv"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

// BenchmarkManifestGeneration1000 syncs a kustomization of 1,000 ConfigMaps through the
// controller (`kustomize build .` generator, server-side apply to the test API server), then
// measures a no-op sync of the same revision: it must run no command. Run with -benchtime 1x:
//
//	go test -run '^$' -bench ManifestGeneration1000 -benchtime 1x ./internal/controller/
func BenchmarkManifestGeneration1000(b *testing.B) {
	const objects = 1000
	g := NewWithT(b)
	// The API server's first request for a CRD builds its handler: done once before the
	// measure, as in a running cluster.
	syncOnce(b, 1)
	var first, noop time.Duration
	var noopRuns int
	for b.Loop() {
		b.StopTimer()
		ns, runs := prepare(b, objects)
		b.StartTimer()

		start := time.Now()
		key := createGeneration(b, ns, generation+"  env:\n    - name: COUNTER_DIR\n      value: "+runs.dir+"\n")
		g.Eventually(readyCondition(key), 5*time.Minute, 50*time.Millisecond).Should(HavePrefix("True|"))
		first += time.Since(start)
		g.Expect(getGeneration(g, key).Status.Inventory.Entries).To(HaveLen(objects))
		g.Expect(runs.count()).To(Equal(1))

		start = time.Now()
		testenv.Poke(b, k8s, &generatorv1.ManifestGeneration{ObjectMeta: metaOf(key)})
		g.Eventually(readyCondition(key), time.Minute, 10*time.Millisecond).Should(HavePrefix("True|"))
		noop += time.Since(start)
		noopRuns += runs.count() - 1
	}
	b.ReportMetric(first.Seconds()/float64(b.N), "s/first-sync")
	b.ReportMetric(float64(noop.Milliseconds())/float64(b.N), "ms/no-op-sync")
	b.ReportMetric(float64(noopRuns)/float64(b.N), "commands/no-op-sync")
}

// generatorRuns counts the runs of the generator of a prepared namespace.
type generatorRuns struct {
	b   testing.TB
	dir string
}

func (r generatorRuns) count() int { return proctest.Runs(r.b, r.dir) }

// prepare publishes a repository whose staging path generates n ConfigMaps, in a new namespace;
// the generation to create there is `generation`, with COUNTER_DIR set to runs.dir.
func prepare(b testing.TB, n int) (ns string, runs generatorRuns) {
	var docs strings.Builder
	for i := range n {
		fmt.Fprintf(&docs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\ndata:\n  index: \"%d\"\n", i, i)
	}
	files := map[string]string{
		".flux.yaml":                 "version: 1\ncommandUpdated:\n  generators:\n    - command: mktemp $COUNTER_DIR/run.XXXXXX >/dev/null && kustomize build .\n",
		"staging/kustomization.yaml": "resources: [configmaps.yaml]\ncommonLabels:\n  env: staging\n",
		"staging/configmaps.yaml":    docs.String(),
	}
	ns = tenantNamespace(b)
	publish(b, ns, "repo", "main@sha1:bench", files)
	return ns, generatorRuns{b: b, dir: proctest.SharedDir(b)}
}

// syncOnce prepares n objects and syncs them once.
func syncOnce(b testing.TB, n int) {
	ns, runs := prepare(b, n)
	key := createGeneration(b, ns, generation+"  env:\n    - name: COUNTER_DIR\n      value: "+runs.dir+"\n")
	NewWithT(b).Eventually(readyCondition(key), 5*time.Minute, 50*time.Millisecond).Should(HavePrefix("True|"))
}
