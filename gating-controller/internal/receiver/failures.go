package receiver

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sourceFailures hold one token bucket (golang.org/x/time/rate) of failed authentications per
// source address, so that a caller without the token can make the receiver read a gate's Secret
// only so often, without touching the budget of the gate's callers (gateLimiters), which only
// authenticated requests spend.
type sourceFailures struct {
	mu       sync.Mutex
	interval time.Duration
	burst    int
	max      int
	bySource map[netip.Prefix]*rate.Limiter
}

func newSourceFailures(interval time.Duration, burst, maxSources int) *sourceFailures {
	return &sourceFailures{interval: interval, burst: burst, max: maxSources, bySource: map[netip.Prefix]*rate.Limiter{}}
}

// sourceOf is the source a request's remote address counts as: the IPv4 address, or the /64 of
// an IPv6 address (what one host is usually given, so that it cannot take a new address per
// attempt). An address that does not parse counts as one shared source.
func sourceOf(remoteAddr string) netip.Prefix {
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

// exhausted tells whether the source has spent its failed attempts. A source not seen yet is
// exhausted only when the set of sources is full of sources still counting.
func (f *sourceFailures) exhausted(src netip.Prefix, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.bySource[src]
	if !ok {
		return !f.roomLocked(now)
	}
	return lim.TokensAt(now) < 1
}

// fail takes one failed attempt from the source's bucket.
func (f *sourceFailures) fail(src netip.Prefix, now time.Time) {
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
func (f *sourceFailures) roomLocked(now time.Time) bool {
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
