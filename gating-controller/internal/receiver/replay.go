package receiver

import (
	"sync"
	"time"
)

// seenRequests remembers the accepted requests of the replay window, by the digest of what
// identifies them, so that the same request sent again within the window is refused; outside
// the window its timestamp refuses it. The set is bounded: requests are remembered only once
// authenticated, so only token holders can fill it.
type seenRequests struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	until  map[[32]byte]time.Time
}

func newSeenRequests(window time.Duration, maxEntries int) *seenRequests {
	return &seenRequests{window: window, max: maxEntries, until: map[[32]byte]time.Time{}}
}

// remember records key at now. It returns replay when key was accepted within the window, and
// full when the set holds max requests that are all still in the window.
func (s *seenRequests) remember(key [32]byte, now time.Time) (replay, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.until[key]; ok && now.Before(until) {
		return true, false
	}
	if len(s.until) >= s.max {
		for k, until := range s.until {
			if !now.Before(until) {
				delete(s.until, k)
			}
		}
		if len(s.until) >= s.max {
			return false, true
		}
	}
	// Twice the window: a timestamp up to one window ahead stays acceptable that long.
	s.until[key] = now.Add(2 * s.window)
	return false, false
}

// forget drops key, for a request that was accepted but could not be written: the caller may
// send it again.
func (s *seenRequests) forget(key [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.until, key)
}
