package imagescan

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RateLimitedError says that a registry kept answering HTTP 429 Too Many
// Requests until the retries ran out.
type RateLimitedError struct {
	Registry string
	Attempts int
	Err      error
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("registry %s rate-limited us (HTTP 429, %d attempts): %v", e.Registry, e.Attempts, e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// rateLimited turns a final HTTP 429 from registry (sanitized: a RegistryError) into a
// RateLimitedError.
func (s *Scanner) rateLimited(registry string, err error) error {
	var rerr *RegistryError
	if errors.As(err, &rerr) && rerr.StatusCode == http.StatusTooManyRequests {
		return &RateLimitedError{Registry: registry, Attempts: s.cfg.RateLimitAttempts, Err: err}
	}
	return err
}

// rateLimitTransport retries requests answered HTTP 429, waiting what the
// answer's Retry-After asks (capped at MaxRetryAfter) or else an
// exponential backoff from RateLimitBackoff, at most RateLimitAttempts
// times. go-containerregistry's own retries (remote.WithRetryBackoff) wait
// a fixed schedule whatever the registry says, so they keep the other
// transient answers and this one takes 429.
type rateLimitTransport struct {
	next http.RoundTripper
	s    *Scanner
}

func (t *rateLimitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	cfg := t.s.cfg
	for attempt := 1; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || attempt >= cfg.RateLimitAttempts {
			return resp, err
		}
		// A body already sent cannot be sent again without GetBody; the
		// scanner only reads, so this is for completeness.
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, nil
		}
		wait, ok := retryAfter(resp.Header.Get("Retry-After"), cfg.Clock.Now())
		if !ok {
			wait = cfg.RateLimitBackoff << (attempt - 1)
		}
		if wait < 0 || wait > cfg.MaxRetryAfter { // < 0: the shift overflowed
			wait = cfg.MaxRetryAfter
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err := t.s.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}
