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

// BenchmarkManifestGeneration500 syncs a kustomization of 500 ConfigMaps through the controller
// (`kustomize build .` generator, server-side apply to the test API server), then measures a
// no-op sync of the same revision: it must run no command. Run with -benchtime 1x:
//
//	go test -run '^$' -bench ManifestGeneration500 -benchtime 1x ./internal/controller/
func BenchmarkManifestGeneration500(b *testing.B) {
	g := NewWithT(b)
	var docs strings.Builder
	for i := range 500 {
		fmt.Fprintf(&docs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\ndata:\n  index: \"%d\"\n", i, i)
	}
	files := map[string]string{
		".flux.yaml":                 "version: 1\ncommandUpdated:\n  generators:\n    - command: mktemp $COUNTER_DIR/run.XXXXXX >/dev/null && kustomize build .\n",
		"staging/kustomization.yaml": "resources: [configmaps.yaml]\ncommonLabels:\n  env: staging\n",
		"staging/configmaps.yaml":    docs.String(),
	}
	var first, noop time.Duration
	var noopRuns int
	for b.Loop() {
		b.StopTimer()
		ns := newNamespace(b)
		counter := proctest.SharedDir(b)
		runs := func() int { return proctest.Runs(b, counter) }
		publish(b, ns, "repo", "main@sha1:bench", files)
		b.StartTimer()

		start := time.Now()
		key := createGeneration(b, ns, generation+"  env:\n    - name: COUNTER_DIR\n      value: "+counter+"\n")
		g.Eventually(readyCondition(key), 5*time.Minute, 50*time.Millisecond).Should(HavePrefix("True|"))
		first += time.Since(start)
		g.Expect(getGeneration(g, key).Status.Inventory.Entries).To(HaveLen(500))
		g.Expect(runs()).To(Equal(1))

		start = time.Now()
		testenv.Poke(b, k8s, &generatorv1.ManifestGeneration{ObjectMeta: metaOf(key)})
		g.Eventually(readyCondition(key), time.Minute, 10*time.Millisecond).Should(HavePrefix("True|"))
		noop += time.Since(start)
		noopRuns += runs() - 1
	}
	b.ReportMetric(first.Seconds()/float64(b.N), "s/first-sync")
	b.ReportMetric(float64(noop.Milliseconds())/float64(b.N), "ms/no-op-sync")
	b.ReportMetric(float64(noopRuns)/float64(b.N), "commands/no-op-sync")
}
