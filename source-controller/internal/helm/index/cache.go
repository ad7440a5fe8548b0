package index

import (
	"container/list"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Cache keeps opened indexes in memory, so resolving a chart costs one read of its section
// instead of reading the index's header and table again (the --helm-cache-* flags of docs/helmchart.md).
// Unlike Flux's cache, a full cache evicts the least recently used index instead of refusing
// new ones: a busy controller keeps the indexes it uses most.
type Cache struct {
	maxSize int
	ttl     time.Duration
	// clock dates the uses of indexes; tests move a fake one.
	clock clock.PassiveClock
	// Events, when set, is told of every hit and miss (the gotk_cache_events_total metric).
	Events func(hit bool)

	mu    sync.Mutex
	lru   *list.List // front: most recently used *cacheEntry
	items map[string]*list.Element
}

type cacheEntry struct {
	path    string
	index   *Index
	expires time.Time
}

// NewCache holds at most maxSize indexes, each for ttl after its last use. A maxSize of 0
// gives a nil cache, which Resolve treats as "no cache".
func NewCache(maxSize int, ttl time.Duration) *Cache {
	if maxSize <= 0 {
		return nil
	}
	return &Cache{maxSize: maxSize, ttl: ttl, clock: clock.RealClock{}, lru: list.New(), items: map[string]*list.Element{}}
}

// Resolve is the package's Resolve through the cache. Index files are content-addressed
// (their names carry the digest), so a path never changes content while it is cached.
func (c *Cache) Resolve(path, name, versionRange string) (*ChartVersion, error) {
	if c == nil {
		return Resolve(path, name, versionRange)
	}
	ix, err := c.get(path)
	if err != nil {
		return nil, err
	}
	return ix.Resolve(name, versionRange)
}

func (c *Cache) get(path string) (*Index, error) {
	c.mu.Lock()
	if el, ok := c.items[path]; ok {
		e := el.Value.(*cacheEntry)
		if c.clock.Now().Before(e.expires) {
			e.expires = c.clock.Now().Add(c.ttl) // the TTL is refreshed on every use
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			c.event(true)
			return e.index, nil
		}
		c.removeLocked(el)
	}
	c.mu.Unlock()
	c.event(false)

	// Opened outside the lock: two HelmCharts missing the same index at once both read it,
	// and the second store wins; cheaper than serialising every miss.
	ix, err := Open(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[path]; ok {
		c.removeLocked(el)
	}
	c.items[path] = c.lru.PushFront(&cacheEntry{path: path, index: ix, expires: c.clock.Now().Add(c.ttl)})
	for c.lru.Len() > c.maxSize {
		c.removeLocked(c.lru.Back())
	}
	return ix, nil
}

func (c *Cache) removeLocked(el *list.Element) {
	c.lru.Remove(el)
	delete(c.items, el.Value.(*cacheEntry).path)
}

func (c *Cache) event(hit bool) {
	if c.Events != nil {
		c.Events(hit)
	}
}

// Len is the number of cached indexes.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Purge removes the expired indexes and returns how many.
func (c *Cache) Purge() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.lru.Back(); el != nil; {
		prev := el.Prev()
		if !c.clock.Now().Before(el.Value.(*cacheEntry).expires) {
			c.removeLocked(el)
			n++
		}
		el = prev
	}
	return n
}

// PurgeEvery purges the cache every interval until ctx ends (a manager runnable).
func (c *Cache) PurgeEvery(ctx context.Context, interval time.Duration) error {
	if c == nil || interval <= 0 {
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.Purge()
		}
	}
}

// Has reports whether the index at path is cached and not expired.
func (c *Cache) Has(path string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[path]
	return ok && c.clock.Now().Before(el.Value.(*cacheEntry).expires)
}
