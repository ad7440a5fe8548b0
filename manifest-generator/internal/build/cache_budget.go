package build

import (
	"container/list"
	"sync"
)

// DefaultCacheMaxSize is the memory the cached build results may take together when
// Options.CacheMaxSize is 0 (--generator-cache-max-size): 256 MiB, 64 results of 20,000
// ordinary objects would take 20 GB.
const DefaultCacheMaxSize int64 = 256 << 20

// resultCache keeps build results by key, at most maxEntries of them and maxBytes of their
// estimated size (cached.size) together, evicting the least recently used first. A result larger
// than maxBytes alone is not kept. It is safe for concurrent use.
type resultCache struct {
	maxEntries int
	maxBytes   int64

	mu      sync.Mutex
	bytes   int64
	order   *list.List // of *cacheEntry, the most recently used first
	entries map[string]*list.Element
}

type cacheEntry struct {
	key   string
	value *cached
	size  int64
}

func newResultCache(maxEntries int, maxBytes int64) *resultCache {
	return &resultCache{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// Get returns the result kept under key, now the most recently used.
func (c *resultCache) Get(key string) (*cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).value, true
}

// Add keeps v under key, replacing what was kept under it, and evicts the least recently used
// results until the cache is within its bounds again. A v larger than the cache's bytes is not
// kept (and what key held is dropped).
func (c *resultCache) Add(key string, v *cached) {
	size := v.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.remove(e)
	}
	if size > c.maxBytes {
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, value: v, size: size})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *resultCache) remove(e *list.Element) {
	ce := c.order.Remove(e).(*cacheEntry)
	delete(c.entries, ce.key)
	c.bytes -= ce.size
}

// usage returns the number of results kept and their estimated size.
func (c *resultCache) usage() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.bytes
}

// size estimates the heap a cached result takes: its objects, as Go holds the maps, slices and
// scalars that encoding/json decodes (and DeepCopy copies), and its other fields.
func (c *cached) size() int64 {
	n := int64(64 + len(c.configFile))
	for _, o := range c.objects {
		n += 16 + valueSize(o.Object)
	}
	for _, id := range c.dropped {
		n += 64 + int64(len(id.APIVersion)+len(id.Kind)+len(id.Namespace)+len(id.Name))
	}
	return n
}

// valueSize estimates the bytes v takes on a 64-bit heap, beyond the interface that holds it:
// a map its header and slots (a slot holds a key's string header, a value's interface and a
// control byte; Go allocates 8 for up to 8 entries, and powers of two at most 7/8 full beyond),
// a slice its header and elements, a string its header and bytes, a number its 8 bytes.
func valueSize(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		n := int64(48)
		if len(v) > 0 {
			slots := 8
			for len(v) > 8 && slots*7/8 < len(v) {
				slots *= 2
			}
			n += 36 * int64(slots)
		}
		for k, x := range v {
			n += int64(len(k)) + valueSize(x)
		}
		return n
	case []any:
		n := int64(24 + 16*len(v))
		for _, x := range v {
			n += valueSize(x)
		}
		return n
	case string:
		return int64(16 + len(v))
	case int64, float64:
		return 8
	default:
		return 0
	}
}
