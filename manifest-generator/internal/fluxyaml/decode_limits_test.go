package fluxyaml

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// tinyScalars is a ConfigMap-like object whose list "items" holds one-letter scalars, size
// bytes in all: the output that takes the most nodes per byte.
func tinyScalars(name string, size int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\nitems:\n", name)
	for b.Len()+4 <= size {
		b.WriteString("- a\n")
	}
	return b.Bytes()
}

// allocated returns the bytes f allocated on the heap, in total.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// peakHeap runs f and returns the largest heap in use while it ran, above the heap before it,
// sampled every millisecond: the memory a process running f needs.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

func generateOutput(out []byte, limits Limits) ([]Generated, error) {
	return GenerateObjects(context.Background(), printed(out), ".", ".", ".flux.yaml", commandConfig("./generate"), limits)
}

// defaultLimits are the controller's limits, named by its flags.
var defaultLimits = Limits{
	MaxGenerators: DefaultMaxGenerators, MaxOutput: DefaultMaxGenerationOutput, MaxObjects: DefaultMaxObjects,
	MaxOutputNodes: DefaultMaxOutputNodes,
	Names:          LimitNames{Generators: "--max-generators", Output: "--max-generation-output-size", Objects: "--max-objects", Nodes: "--max-output-nodes"},
}

// A 60 MB document, under the 64 MiB a command may print, is refused before it is converted:
// converting it took 5 GB.
func TestDecodeRefusesALargeDocumentUnread(t *testing.T) {
	g := NewWithT(t)
	out := tinyScalars("huge", 60_000_000)
	var err error
	total := allocated(func() { _, err = generateOutput(out, defaultLimits) })
	var me *ManifestError
	g.Expect(errors.As(err, &me)).To(BeTrue())
	g.Expect(err).To(MatchError(`generator "./generate" of .flux.yaml printed a document too large to decode: document 1: 59999997 bytes, ` +
		`over the limit of 8388608 bytes (8 MiB) for one document (no Kubernetes object is that large); print the objects of a List as documents of their own`))
	t.Logf("refusing a %d-byte document allocated %d bytes", len(out), total)
	g.Expect(total).To(BeNumerically("<", 1<<20))

	// As JSON, the same.
	js := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},"items":["a"` + strings.Repeat(`,"a"`, 15_000_000) + "]}")
	total = allocated(func() { _, err = generateOutput(js, defaultLimits) })
	g.Expect(err).To(MatchError(HavePrefix(`generator "./generate" of .flux.yaml printed a document too large to decode: document 1: more than 8388608 bytes, over the limit of 8388608 bytes (8 MiB)`)))
	t.Logf("refusing a %d-byte JSON document allocated %d bytes", len(js), total)
	g.Expect(total).To(BeNumerically("<", 40<<20))
}

// A document under 8 MiB with millions of nodes is refused before it is converted too:
// converting it takes half a gigabyte.
func TestDecodeRefusesADocumentOfTooManyNodesUnread(t *testing.T) {
	g := NewWithT(t)
	out := tinyScalars("dense", 8_000_000)
	var err error
	total := allocated(func() { _, err = generateOutput(out, defaultLimits) })
	g.Expect(err).To(MatchError(`generator "./generate" of .flux.yaml printed a document too large to decode: document 1: up to 1999990 nodes ` +
		`(counted in its text before it is decoded), over the limit of 524288 nodes for one document (no Kubernetes object has that many); ` +
		`print the objects of a List as documents of their own`))
	t.Logf("refusing a document of 2,000,000 nodes allocated %d bytes", total)
	g.Expect(total).To(BeNumerically("<", 1<<20))

	// At the limit, the document is decoded.
	objs, err := generateOutput(tinyScalars("at-limit", 4*(MaxDocumentNodes-7)+50), Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
}

// A 60 MB output of many small documents is decoded one document at a time, and refused as
// soon as its nodes are over --max-output-nodes: what it takes is what the limit allows, not
// what the output holds (decoding all of it took gigabytes).
func TestDecodeStopsAtTheNodeBudget(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	for i := 0; out.Len() < 60_000_000; i++ {
		out.WriteString("---\n")
		out.Write(tinyScalars(fmt.Sprintf("cm-%d", i), 4000))
	}
	small := defaultLimits
	small.MaxOutputNodes = 100_000
	var err error
	total := allocated(func() { _, err = generateOutput(out.Bytes(), small) })
	var le *LimitError
	g.Expect(errors.As(err, &le)).To(BeTrue())
	g.Expect(err).To(MatchError(`.flux.yaml gives at least 100980 YAML nodes (mappings, sequences and scalars), over the limit of 100000 (--max-output-nodes)`))
	t.Logf("refusing %d bytes at 100,000 nodes allocated %d MB", out.Len(), total>>20)
	g.Expect(total).To(BeNumerically("<", 100<<20), "the decode went on past the limit")

	// At the default limit, the memory the decode takes is what the limit allows.
	var peak uint64
	total = allocated(func() { peak = peakHeap(func() { _, err = generateOutput(out.Bytes(), defaultLimits) }) })
	g.Expect(err).To(MatchError(HavePrefix(`.flux.yaml gives at least 2000`)))
	g.Expect(err).To(MatchError(HaveSuffix(` YAML nodes (mappings, sequences and scalars), over the limit of 2000000 (--max-output-nodes)`)))
	t.Logf("refusing %d bytes at the default limit allocated %d MB, with a peak heap of %d MB", out.Len(), total>>20, peak>>20)
	g.Expect(peak).To(BeNumerically("<", 300<<20))
}

// The budget is the whole sync's: every generator's objects count, and the files of raw mode.
func TestNodeBudgetCoversAllGeneratorsAndFiles(t *testing.T) {
	g := NewWithT(t)
	limits := defaultLimits
	limits.MaxOutputNodes = 1_500
	root := t.TempDir()
	files := map[string]string{}
	for i := range 2 {
		files[fmt.Sprintf("apps/cm-%d.yaml", i)] = string(tinyScalars(fmt.Sprintf("cm-%d", i), 4000))
	}
	writeTree(t, root, files)

	_, err := GenerateObjects(context.Background(), shell{}, root, ".", ".flux.yaml", commandConfig("cat apps/cm-0.yaml", "cat apps/cm-1.yaml"), limits)
	g.Expect(err).To(MatchError(`.flux.yaml gives at least 1980 YAML nodes (mappings, sequences and scalars), over the limit of 1500 (--max-output-nodes)`))
	_, err = GenerateObjects(context.Background(), shell{}, root, ".", ".flux.yaml", &Config{Version: 1, ScanForFiles: &ScanForFiles{}}, limits)
	g.Expect(err).To(MatchError(`.flux.yaml gives at least 1980 YAML nodes (mappings, sequences and scalars), over the limit of 1500 (--max-output-nodes)`))
	_, err = ReadRaw(root, "apps", limits)
	var le *LimitError
	g.Expect(errors.As(err, &le)).To(BeTrue())
	g.Expect(err).To(MatchError(`path 'apps' gives at least 1980 YAML nodes (mappings, sequences and scalars), over the limit of 1500 (--max-output-nodes)`))

	limits.MaxOutputNodes = 1980
	objs, err := ReadRaw(root, "apps", limits)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	limits.MaxOutputNodes = 0
	_, err = ReadRaw(root, "apps", limits)
	g.Expect(err).NotTo(HaveOccurred())
}

// Raw files are held to the limits of a document too, whether they hold objects or not.
func TestReadRawRefusesALargeDocument(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{"apps/values.yaml": string(tinyScalars("values", MaxDocumentSize+4))})
	_, err := ReadRawObjects(root, "apps", Limits{})
	g.Expect(err).To(MatchError(`file apps/values.yaml holds a document too large to decode: document 1: 8388611 bytes, over the limit of 8388608 bytes (8 MiB) ` +
		`for one document (no Kubernetes object is that large); split it, or move the file out of the path when it holds no Kubernetes objects`))
}

// sigs.k8s.io/yaml bounds alias expansion: a "billion laughs" document of a few hundred bytes
// is refused after a bounded amount of work, not expanded into 10^9 nodes.
func TestDecodeRefusesAliasExpansion(t *testing.T) {
	g := NewWithT(t)
	var doc strings.Builder
	doc.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&doc, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				doc.WriteString(", ")
			}
			fmt.Fprintf(&doc, "*a%d", i-1)
		}
		doc.WriteString("]\n")
	}
	var err error
	total := allocated(func() { _, err = generateOutput([]byte(doc.String()), defaultLimits) })
	g.Expect(err).To(MatchError(ContainSubstring("document contains excessive aliasing")))
	t.Logf("refusing %d bytes of aliases allocated %d MB", doc.Len(), total>>20)
	g.Expect(total).To(BeNumerically("<", 300<<20))
}

// estimateNodes never counts fewer nodes than a document decodes to, so that no document is
// converted that turns out to be over MaxDocumentNodes (aliases aside: see estimateNodes).
func TestEstimateNodes(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		nodes int64
	}{
		{"a: 1\n", 2},
		{"- a\n- b\n", 3},
		{"a:\n  - b\n  - c: d\n    e:\n", 6},
		{"{\"a\":[1,2],\"b\":{\"c\":null}}", 6},
		{"[a: 1, b]", 4},
		{"[\"a\":1]", 3},
		{"[? a]", 3},
		{"- -\n", 3},
		{"a: |\n  - x\n  - y\n", 2},
		{"<<: {a: 1}\nb: 2\n", 3},
		{deploymentYAML, 19},
		{ordinaryObject(0), 41},
	} {
		g := NewWithT(t)
		js, err := yaml.YAMLToJSON([]byte(tc.doc))
		g.Expect(err).NotTo(HaveOccurred(), tc.doc)
		var v any
		_, err = kjson.UnmarshalStrict(js, &v)
		g.Expect(err).NotTo(HaveOccurred(), tc.doc)
		g.Expect(countNodes(v)).To(Equal(tc.nodes), tc.doc)
		g.Expect(estimateNodes([]byte(tc.doc))).To(BeNumerically(">=", tc.nodes), tc.doc)
	}
}

func FuzzEstimateNodes(f *testing.F) {
	for _, s := range []string{"a: 1\n", "[a: 1, b]", "{a, b: [c, {d: e}]}", "[\"a\":1]", "? a\n: b\n", "- - - a\n", deploymentYAML} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 4096 || bytes.IndexByte(doc, '*') >= 0 {
			return // aliases are bounded by sigs.k8s.io/yaml
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return
		}
		var v any
		if _, err := kjson.UnmarshalStrict(js, &v); err != nil {
			return
		}
		if n, est := countNodes(v), estimateNodes(doc); int64(est) < n {
			t.Fatalf("%q: estimated %d nodes, decoded %d", doc, est, n)
		}
	})
}
