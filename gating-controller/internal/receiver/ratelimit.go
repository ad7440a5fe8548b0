package receiver

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// gateLimiters hold one token bucket (golang.org/x/time/rate) per gate, so that a busy or
// misbehaving caller of one gate neither floods the API server nor slows the other gates.
type gateLimiters struct {
	mu       sync.Mutex
	interval time.Duration
	burst    int
	byGate   map[types.NamespacedName]*rate.Limiter
}

func newGateLimiters(interval time.Duration, burst int) *gateLimiters {
	return &gateLimiters{interval: interval, burst: burst, byGate: map[types.NamespacedName]*rate.Limiter{}}
}

// allow takes one request from the gate's bucket; false means 429.
func (l *gateLimiters) allow(gate types.NamespacedName, now time.Time) bool {
	l.mu.Lock()
	lim, ok := l.byGate[gate]
	if !ok {
		lim = rate.NewLimiter(rate.Every(l.interval), l.burst)
		l.byGate[gate] = lim
	}
	l.mu.Unlock()
	return lim.AllowN(now, 1)
}
