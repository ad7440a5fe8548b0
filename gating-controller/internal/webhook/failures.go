package webhook

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SourceFailures hold one token bucket (golang.org/x/time/rate) of failed authentications per
// source address, so that a caller without the token can make a receiver read an object's Secret
// only so often, without touching the budget of the object's callers (Limiters), which only
// authenticated requests spend.
type SourceFailures struct {
	mu       sync.Mutex
	interval time.Duration
	burst    int
	max      int
	bySource map[netip.Prefix]*rate.Limiter
}

// NewSourceFailures takes burst failed attempts per source at once, then one every interval,
// and remembers up to maxSources sources.
func NewSourceFailures(interval time.Duration, burst, maxSources int) *SourceFailures {
	return &SourceFailures{interval: interval, burst: burst, max: maxSources, bySource: map[netip.Prefix]*rate.Limiter{}}
}

// SourceOf is the source a request's remote address counts as: the IPv4 address, or the /64 of
// an IPv6 address (what one host is usually given, so that it cannot take a new address per
// attempt). An address that does not parse counts as one shared source.
func SourceOf(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

// Exhausted tells whether the source has spent its failed attempts. A source not seen yet is
// exhausted only when the set of sources is full of sources still counting.
func (f *SourceFailures) Exhausted(src netip.Prefix, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.bySource[src]
	if !ok {
		return !f.roomLocked(now)
	}
	return lim.TokensAt(now) < 1
}

// Fail takes one failed attempt from the source's bucket.
func (f *SourceFailures) Fail(src netip.Prefix, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.bySource[src]
	if !ok {
		if !f.roomLocked(now) {
			return
		}
		lim = rate.NewLimiter(rate.Every(f.interval), f.burst)
		f.bySource[src] = lim
	}
	lim.AllowN(now, 1)
}

// roomLocked makes room for one more source when the set is full, by forgetting the sources
// whose bucket is full again (they failed long enough ago); false when none could be forgotten.
func (f *SourceFailures) roomLocked(now time.Time) bool {
	if len(f.bySource) < f.max {
		return true
	}
	for src, lim := range f.bySource {
		if lim.TokensAt(now) >= float64(f.burst) {
			delete(f.bySource, src)
		}
	}
	return len(f.bySource) < f.max
}
