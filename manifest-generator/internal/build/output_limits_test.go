package build

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
)

// controllerLimits are the controller's default limits, named by its flags (main.go).
var controllerLimits = fluxyaml.Limits{
	MaxGenerators: fluxyaml.DefaultMaxGenerators, MaxOutput: fluxyaml.DefaultMaxGenerationOutput,
	MaxObjects: fluxyaml.DefaultMaxObjects, MaxOutputNodes: fluxyaml.DefaultMaxOutputNodes,
	Names: fluxyaml.LimitNames{Generators: "--max-generators", Output: "--max-generation-output-size",
		Objects: "--max-objects", Nodes: "--max-output-nodes"},
}

// heapPeak samples the heap of the test process every millisecond until stop is called, which
// returns the largest heap seen above the heap when it started (garbage not yet collected
// included: the memory the process needs), and the largest live heap (what the last garbage
// collection kept) above the live heap then.
func heapPeak() (stop func() (heap, live uint64)) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	baseHeap, baseLive := sample[0].Value.Uint64(), sample[1].Value.Uint64()
	var peakHeap, peakLive uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peakHeap, peakLive = max(peakHeap, s[0].Value.Uint64()), max(peakLive, s[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	return func() (uint64, uint64) {
		close(done)
		wg.Wait()
		return max(peakHeap, baseHeap) - baseHeap, max(peakLive, baseLive) - baseLive
	}
}

// Four ManifestGenerations whose generators each print 60 MB of one-letter YAML items, under the
// 64 MiB a command may print, sync at once (as with --concurrent=4). Each fails with an error
// that says what to fix, and the process stays inside the controller's 2 GiB: decoding one such
// output as one document took a heap of 4 GB (7.5 GB allocated, 72 s), and 60 MB of small
// documents were all decoded, 15 million nodes.
//
// Most of what remains is the outputs themselves: the runner session reads each into a buffer
// of its own before it hands it over, and the four outputs of "one document", of which nothing
// is decoded, take a peak heap of 600 to 750 MB. The live heap, what the garbage collector
// keeps, is about half the peak.
func TestBuildConcurrentHugeOutputsFailCleanly(t *testing.T) {
	const concurrent = 4
	for _, tc := range []struct {
		name, generator, err string
	}{{
		name: "one document",
		generator: `printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\nitems:\n'; ` +
			`yes -- '- a' | head -c 60000000`,
		err: `generator GENERATOR of .flux.yaml printed a document too large to decode: document 1: 60000061 bytes, ` +
			`over the limit of 8388608 bytes (8 MiB) for one document (no Kubernetes object is that large); print the objects of a List as documents of their own`,
	}, {
		name: "many documents",
		generator: `awk 'BEGIN { for (i = 0; i < 15000; i++) { ` +
			`printf "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\nitems:\n", i; ` +
			`for (j = 0; j < 1000; j++) print "- a" } }'`,
		err: `.flux.yaml gives at least 2000934 YAML nodes (mappings, sequences and scalars), over the limit of 2000000 (--max-output-nodes)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := serveArtifacts(t)
			art := srv.publish(t, "r1", writeTree(t, map[string]string{
				".flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n    - command: " + yamlQuote(tc.generator) + "\n",
			}))
			b := newBuilder(t, Options{Limits: controllerLimits})

			errs := make([]error, concurrent)
			start := time.Now()
			stop := heapPeak()
			var wg sync.WaitGroup
			for i := range concurrent {
				wg.Go(func() {
					// Separate namespaces: four ManifestGenerations, no cache hit between them.
					owner := testOwner
					owner.Namespace = fmt.Sprintf("tenant-%d", i)
					_, errs[i] = b.Build(context.Background(), owner, art, specOf("."))
				})
			}
			wg.Wait()
			peak, live := stop()
			t.Logf("%d builds of 60 MB failed in %s, with a peak heap of %d MB (live: %d MB)", concurrent, time.Since(start).Round(time.Millisecond), peak>>20, live>>20)
			for _, err := range errs {
				g.Expect(err).To(MatchError(strings.ReplaceAll(tc.err, "GENERATOR", strconv.Quote(tc.generator))))
				g.Expect(IsTerminal(err)).To(BeTrue(), "the same revision prints the same output")
			}
			g.Expect(live).To(BeNumerically("<", 1<<30))
			g.Expect(peak).To(BeNumerically("<", 1792<<20))
		})
	}
}

// yamlQuote quotes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	return fmt.Sprintf("%q", s)
}
