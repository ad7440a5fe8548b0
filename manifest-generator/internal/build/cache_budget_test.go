package build

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// cachedOfSize is a result of one ConfigMap whose estimated size is n bytes.
func cachedOfSize(t *testing.T, name string, n int64) *cached {
	t.Helper()
	obj := func(pad int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name},
			"data": map[string]any{"pad": strings.Repeat("x", int(pad))},
		}}
	}
	base := (&cached{objects: []*unstructured.Unstructured{obj(0)}}).size()
	if n < base {
		t.Fatalf("a result takes %d bytes at least", base)
	}
	c := &cached{objects: []*unstructured.Unstructured{obj(n - base)}}
	if c.size() != n {
		t.Fatalf("size %d, want %d", c.size(), n)
	}
	return c
}

// The cache keeps the most recently used results within both of its bounds.
func TestResultCacheBounds(t *testing.T) {
	type step struct {
		add  string // key to add, with size
		size int64
		get  string // key to look up
		// then: the keys kept, most recently used first, and their bytes
		kept  []string
		bytes int64
	}
	for _, tc := range []struct {
		name       string
		maxEntries int
		maxBytes   int64
		steps      []step
	}{
		{name: "within both bounds", maxEntries: 3, maxBytes: 30000, steps: []step{
			{add: "a", size: 10000, kept: []string{"a"}, bytes: 10000},
			{add: "b", size: 10000, kept: []string{"b", "a"}, bytes: 20000},
			{add: "c", size: 10000, kept: []string{"c", "b", "a"}, bytes: 30000},
		}},
		{name: "over the bytes, the least recently used go", maxEntries: 10, maxBytes: 30000, steps: []step{
			{add: "a", size: 10000},
			{add: "b", size: 10000},
			{add: "c", size: 10000},
			{get: "a", kept: []string{"a", "c", "b"}, bytes: 30000},
			{add: "d", size: 15000, kept: []string{"d", "a"}, bytes: 25000},
		}},
		{name: "over the entries", maxEntries: 2, maxBytes: 10 << 30, steps: []step{
			{add: "a", size: 10000},
			{add: "b", size: 10000},
			{get: "a"},
			{add: "c", size: 10000, kept: []string{"c", "a"}, bytes: 20000},
		}},
		{name: "a result larger than the cache is not kept", maxEntries: 10, maxBytes: 30000, steps: []step{
			{add: "a", size: 10000},
			{add: "big", size: 30010, kept: []string{"a"}, bytes: 10000},
			{add: "whole", size: 30000, kept: []string{"whole"}, bytes: 30000},
		}},
		{name: "a key added again is replaced", maxEntries: 10, maxBytes: 30000, steps: []step{
			{add: "a", size: 10000},
			{add: "b", size: 10000},
			{add: "a", size: 20000, kept: []string{"a", "b"}, bytes: 30000},
			{add: "b", size: 50000, kept: []string{"a"}, bytes: 20000},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newResultCache(tc.maxEntries, tc.maxBytes)
			for i, s := range tc.steps {
				if s.add != "" {
					c.Add(s.add, cachedOfSize(t, s.add, s.size))
				}
				if s.get != "" {
					_, ok := c.Get(s.get)
					g.Expect(ok).To(BeTrue(), "step %d", i)
				}
				if s.kept == nil {
					continue
				}
				var kept []string
				for e := c.order.Front(); e != nil; e = e.Next() {
					ce := e.Value.(*cacheEntry)
					g.Expect(ce.value.objects[0].GetName()).To(Equal(ce.key))
					g.Expect(c.entries).To(HaveKeyWithValue(ce.key, e))
					kept = append(kept, ce.key)
				}
				g.Expect(kept).To(Equal(s.kept), "step %d", i)
				n, bytes := c.usage()
				g.Expect(n).To(Equal(len(s.kept)))
				g.Expect(c.entries).To(HaveLen(len(s.kept)))
				g.Expect(bytes).To(Equal(s.bytes), "step %d", i)
			}
		})
	}
}

// The size of a result is what its objects take on the heap, within a fifth, from ordinary
// objects to the densest YAML: the cache's bound is one of memory.
func TestCachedSizeEstimatesTheHeap(t *testing.T) {
	docs := map[string]string{
		"ordinary objects": deploymentYAML + "---\n" + serviceYAML + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n  script: |\n    echo hello\n",
		"one-letter items": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\nitems:\n" + strings.Repeat("- a\n", 200),
		"nested mappings":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\nitems:\n" + strings.Repeat("- {a: {b: 1}}\n", 200),
		"long strings":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" + longData(50),
		"wide mappings":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" + wideData(300),
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// What the cache keeps once the objects it copied are gone.
			var c *cached
			heap := retained(func() { c = newCached(&Result{Objects: decodeStream(t, doc, 500), ConfigFile: ".flux.yaml"}) })
			est := c.size()
			t.Logf("estimated %d bytes, %d on the heap (%.2f)", est, heap, float64(est)/float64(heap))
			g.Expect(float64(est)).To(BeNumerically("~", float64(heap), float64(heap)/5))
			runtime.KeepAlive(c)
		})
	}
}

func longData(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  key-%d: %s\n", i, strings.Repeat("z", 3000))
	}
	return b.String()
}

func wideData(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  key-%d: v%d\n", i, i)
	}
	return b.String()
}

// decodeStream decodes copies of the documents of doc, n times over, as fluxyaml does.
func decodeStream(t *testing.T, doc string, n int) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for range n {
		for _, d := range strings.Split(doc, "---\n") {
			js, err := yaml.YAMLToJSON([]byte(d))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if _, err := kjson.UnmarshalStrict(bytes.TrimSpace(js), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

// retained is the heap f leaves allocated.
func retained(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}
