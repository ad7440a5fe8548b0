package webhook

import (
	"context"
	"time"
)

// SeenRequests remembers the accepted requests of a window, by the digest of what identifies
// them, so that the same request sent again within the window is known as a replay. The set is
// bounded: requests are remembered only once authenticated, so only token holders can fill it.
type SeenRequests struct {
	window time.Duration
	set    *digestSet
	// claims, when set, share the set with the other replicas (Share).
	claims *Claims
}

// Share makes the set every replica's: a request accepted by one is a replay on all (Claims).
func (s *SeenRequests) Share(c *Claims) { s.claims = c }

// Seen remembers key, accepted at now, here and, when shared, in the API. It returns replay
// when key was accepted within the window, by this replica or another, and full when this
// replica's set is full. A claim that cannot be written is an error: the request is not
// remembered, and is refused.
func (s *SeenRequests) Seen(ctx context.Context, key [32]byte, now time.Time) (replay, full bool, err error) {
	replay, full = s.Remember(key, now)
	if replay || full || s.claims == nil {
		return replay, full, nil
	}
	replay, err = s.claims.Claim(ctx, key, now, s.window)
	if err != nil {
		s.Forget(key)
		return false, false, err
	}
	return replay, false, nil
}

// Drop forgets key here and in the API: a request that was accepted but could not be written.
func (s *SeenRequests) Drop(ctx context.Context, key [32]byte) error {
	s.Forget(key)
	if s.claims == nil {
		return nil
	}
	return s.claims.Release(ctx, key)
}

// NewSeenRequests remembers each request for the window, and at most maxEntries at once.
func NewSeenRequests(window time.Duration, maxEntries int) *SeenRequests {
	return &SeenRequests{window: window, set: newDigestSet(maxEntries)}
}

// Remember records key at now. It returns replay when key was accepted within the window, and
// full when the set holds max requests that are all still in the window.
func (s *SeenRequests) Remember(key [32]byte, now time.Time) (replay, full bool) {
	return s.set.add(key, now, s.window)
}

// Forget drops key, for a request that was accepted but could not be written: the caller may
// send it again.
func (s *SeenRequests) Forget(key [32]byte) { s.set.remove(key) }
