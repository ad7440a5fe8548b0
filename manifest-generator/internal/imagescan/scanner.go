package imagescan

import (
	"context"
	"net/http"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
)

// Defaults of Config.
const (
	DefaultInterval          = 5 * time.Minute
	DefaultDigestRefresh     = 24 * time.Hour
	DefaultMaxConcurrent     = 4
	DefaultRateLimitAttempts = 4
	DefaultRateLimitBackoff  = time.Second
	DefaultMaxRetryAfter     = time.Minute
	DefaultRequestTimeout    = 2 * time.Minute
)

// Config configures a Scanner. Zero fields take the defaults above.
type Config struct {
	// Interval is how long a repository's tag list is used before it is
	// listed again (Flux v1's --registry-poll-interval).
	Interval time.Duration
	// DigestRefresh is how long a tag is taken to point at the digest it was
	// last seen at (never less than Interval). Tags are rarely moved, and
	// checking each one every Interval would cost a request per tag instead
	// of one per repository.
	DigestRefresh time.Duration
	// MaxConcurrent bounds the registry operations in flight over all
	// registries, whoever asks.
	MaxConcurrent int
	// RateLimitAttempts bounds the tries of a request a registry answers
	// with HTTP 429; RateLimitBackoff is the first wait (doubling each time)
	// when the answer has no Retry-After, and MaxRetryAfter caps the wait
	// Retry-After asks for.
	RateLimitAttempts int
	RateLimitBackoff  time.Duration
	MaxRetryAfter     time.Duration
	// RequestTimeout bounds one shared registry operation, which runs on
	// behalf of every caller waiting for it and so outlives none of their
	// contexts in particular.
	RequestTimeout time.Duration
	// Addresses say which addresses the registries may be at; the zero value refuses loopback,
	// link-local and unspecified addresses (AddressPolicy).
	Addresses AddressPolicy
	// Clock is the time source of the cache's ages and Retry-After dates (the real clock when
	// nil); tests move a fake one.
	Clock clock.PassiveClock
}

// Scanner lists tags and reads creation times of images for every workload
// of a controller: one Scanner per process, so that workloads following the
// same repository share its requests. It is safe for concurrent use.
type Scanner struct {
	cfg   Config
	sem   chan struct{}
	sleep func(context.Context, time.Duration) error // waits between 429 retries
	stats counters

	flight singleflight.Group

	mu      sync.Mutex
	tags    map[string]tagList    // repository+credentials -> tag list
	digests map[string]tagDigest  // tag+credentials -> digest
	created map[v1.Hash]time.Time // digest -> creation time, content-addressed
	pullers map[pullerKey]*pullerEntry
	// plain is the transport of Options without one; guarded those of the transports given,
	// with the address policy.
	plain   *http.Transport
	guarded map[*http.Transport]*http.Transport
}

// New returns a Scanner with cfg's defaults filled in.
func New(cfg Config) *Scanner {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.DigestRefresh <= 0 {
		cfg.DigestRefresh = DefaultDigestRefresh
	}
	cfg.DigestRefresh = max(cfg.DigestRefresh, cfg.Interval)
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.RateLimitAttempts <= 0 {
		cfg.RateLimitAttempts = DefaultRateLimitAttempts
	}
	if cfg.RateLimitBackoff <= 0 {
		cfg.RateLimitBackoff = DefaultRateLimitBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Scanner{
		cfg:     cfg,
		sem:     make(chan struct{}, cfg.MaxConcurrent),
		sleep:   sleepContext,
		tags:    map[string]tagList{},
		digests: map[string]tagDigest{},
		created: map[v1.Hash]time.Time{},
		pullers: map[pullerKey]*pullerEntry{},
		plain:   cfg.Addresses.defaultTransport(),
		guarded: map[*http.Transport]*http.Transport{},
	}
}

// acquire takes one of the MaxConcurrent slots for a registry operation;
// the returned func gives it back.
func (s *Scanner) acquire(ctx context.Context) (func(), error) {
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// shared runs fn once for every caller asking for key at the same time,
// each caller waiting no longer than its own context allows. fn runs under
// a context of its own (RequestTimeout), since the caller that started it
// may give up while others still wait.
func (s *Scanner) shared(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	ch := s.flight.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RequestTimeout)
		defer cancel()
		return fn(fctx)
	})
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
