package webhook

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// Limiters hold one token bucket (golang.org/x/time/rate) per object (a gate, a Receiver), so that
// a busy or misbehaving caller of one object neither floods the API server nor slows the others.
// The keys are objects that exist, found before a request is counted: callers cannot grow the set
// beyond the objects of the cluster.
type Limiters struct {
	mu       sync.Mutex
	interval time.Duration
	burst    int
	byKey    map[types.NamespacedName]*rate.Limiter
}

// NewLimiters takes burst requests per object at once, then one every interval.
func NewLimiters(interval time.Duration, burst int) *Limiters {
	return &Limiters{interval: interval, burst: burst, byKey: map[types.NamespacedName]*rate.Limiter{}}
}

// Allow takes one request from the object's bucket; false means 429.
func (l *Limiters) Allow(key types.NamespacedName, now time.Time) bool {
	l.mu.Lock()
	lim, ok := l.byKey[key]
	if !ok {
		lim = rate.NewLimiter(rate.Every(l.interval), l.burst)
		l.byKey[key] = lim
	}
	l.mu.Unlock()
	return lim.AllowN(now, 1)
}
