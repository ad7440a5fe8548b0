package webhook

import (
	"sync"
	"time"
)

// digestSet is a bounded set of SHA-256 digests, each held until a time. When it is full, the
// digests whose time has passed make room; when none has, nothing is added. Its users keep
// digests only of what was authenticated, so that callers without credentials cannot fill it.
type digestSet struct {
	mu    sync.Mutex
	max   int
	until map[[32]byte]time.Time
}

func newDigestSet(maxEntries int) *digestSet {
	return &digestSet{max: maxEntries, until: map[[32]byte]time.Time{}}
}

// holds tells whether key is in the set at now.
func (s *digestSet) holds(key [32]byte, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.until[key]
	return ok && now.Before(until)
}

// add holds key until now+ttl unless it is held already (held) or the set is full of digests
// still held (full). The check and the addition are one step, so that of callers racing with
// the same key exactly one adds it.
func (s *digestSet) add(key [32]byte, now time.Time, ttl time.Duration) (held, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.until[key]; ok && now.Before(until) {
		return true, false
	}
	if !s.roomLocked(now) {
		return false, true
	}
	s.until[key] = now.Add(ttl)
	return false, false
}

// put holds key until now+ttl, whether it was held or not, unless the set is full of other
// digests still held.
func (s *digestSet) put(key [32]byte, now time.Time, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.until[key]; ok || s.roomLocked(now) {
		s.until[key] = now.Add(ttl)
	}
}

// roomLocked makes room for one more digest when the set is full, by dropping those whose time
// has passed; false when none had.
func (s *digestSet) roomLocked(now time.Time) bool {
	if len(s.until) < s.max {
		return true
	}
	for k, until := range s.until {
		if !now.Before(until) {
			delete(s.until, k)
		}
	}
	return len(s.until) < s.max
}

// remove drops key.
func (s *digestSet) remove(key [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.until, key)
}
