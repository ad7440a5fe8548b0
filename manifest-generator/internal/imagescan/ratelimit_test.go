package imagescan

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// recordSleeps makes s record the waits between retries instead of waiting.
func recordSleeps(s *Scanner) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	s.sleep = func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return nil
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

func tooManyRequests(w http.ResponseWriter, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write([]byte(`{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`))
}

func TestRateLimitBackoff(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	var lists atomic.Int64
	// The registry answers the tag list 429 twice, with and then without
	// Retry-After, then serves it.
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isTagList(r) {
			switch lists.Add(1) {
			case 1:
				tooManyRequests(w, "7")
				return
			case 2:
				tooManyRequests(w, "")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	s := New(Config{Addresses: allowLoopback, RateLimitBackoff: 3 * time.Second, Clock: newClock()})
	waits := recordSleeps(s)

	tags, err := s.Tags(context.Background(), repository(t, host, "app"), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0"))
	// Retry-After first, then the backoff of the second attempt.
	g.Expect(waits()).To(Equal([]time.Duration{7 * time.Second, 6 * time.Second}))
	g.Expect(lists.Load()).To(Equal(int64(3)))
	g.Expect(s.Stats().TagLists).To(Equal(int64(3)))
	g.Expect(s.Stats().RateLimited).To(Equal(int64(2)))
}

func TestRateLimitGivesUp(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isTagList(r) {
			tooManyRequests(w, "3600")
			return
		}
		next.ServeHTTP(w, r)
	})
	s := New(Config{Addresses: allowLoopback, RateLimitAttempts: 3, MaxRetryAfter: 30 * time.Second, Clock: newClock()})
	waits := recordSleeps(s)

	_, err := s.Tags(context.Background(), repository(t, host, "app"), Options{})
	var rl *RateLimitedError
	g.Expect(errors.As(err, &rl)).To(BeTrue(), "%v", err)
	g.Expect(rl.Registry).To(Equal(host))
	g.Expect(err).To(MatchError(ContainSubstring("registry " + host + " rate-limited us (HTTP 429, 3 attempts)")))
	// Retry-After capped; no wait after the last attempt.
	g.Expect(waits()).To(Equal([]time.Duration{30 * time.Second, 30 * time.Second}))
	g.Expect(s.Stats().RateLimited).To(Equal(int64(3)))
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},
		{"-5", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		got, ok := retryAfter(tt.header, now)
		g.Expect(ok).To(Equal(tt.ok), tt.header)
		g.Expect(got).To(Equal(tt.want), tt.header)
	}
}
