package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// DefaultTimeout is the timeout of a request when the GateNotification sets none.
const DefaultTimeout = 10 * time.Second

// MaxResponseSize is how much of an answer is read (and discarded) before the connection is
// reused: an endpoint cannot make the controller read without end.
const MaxResponseSize = 64 << 10

// MaxListSize bounds the answer to a Target's Existing URL: a page of 100 commit statuses is
// under 200 KiB.
const MaxListSize = 1 << 20

// SignatureHeader carries the signature of a generic-hmac body: `sha256=<hex HMAC-SHA256 of the
// body keyed with the Secret's token>`, the header and form of Flux's generic-hmac provider.
const SignatureHeader = "X-Signature"

// Target is one endpoint an event is posted to. URL and Token are secrets: they are never in an
// error, a log line, an event or a condition.
type Target struct {
	// Key names the GateNotification: namespace/name.
	Key string
	// Type is generic, generic-hmac, slack or msteams.
	Type string
	// URL is posted to.
	URL string
	// Token keys the HMAC of generic-hmac.
	Token []byte
	// Headers are set on each request (a Provider's Secret's headers); they cannot replace
	// Content-Type or the signature.
	Headers map[string]string
	// Timeout of each request; 0 is DefaultTimeout.
	Timeout time.Duration
	// Existing, when set, is a URL whose answer to GET lists what the endpoint has already: a
	// Deduplicated message found there is not posted again. It is a secret, as URL is.
	Existing string
}

// A Deduplicated message can tell from the answer to its Target's Existing URL that the
// endpoint has it already (a commit status of the same state, say).
type Deduplicated interface {
	Delivered(answer []byte) bool
}

// Retry bounds the attempts of a delivery.
type Retry struct {
	// Attempts is the most requests made for one delivery.
	Attempts int
	// BaseDelay is the wait after the first failed attempt; each further wait doubles, up to
	// MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter caps the wait an endpoint asks for in Retry-After.
	MaxRetryAfter time.Duration
}

// DefaultRetry: 5 attempts, waiting 1s, 2s, 4s, 8s in between; Retry-After honoured up to 1m.
var DefaultRetry = Retry{Attempts: 5, BaseDelay: time.Second, MaxDelay: 30 * time.Second, MaxRetryAfter: time.Minute}

// Outcome is what a delivery came to.
type Outcome struct {
	// Attempts made.
	Attempts int
	// Status is the HTTP status of the last answer; 0 when there was none.
	Status int
	// Duplicate is set when nothing was posted: the endpoint had the message already.
	Duplicate bool
	// Err is nil on success; its message names neither the URL nor the token.
	Err error
}

// Sender posts events, one delivery at a time per call; it is safe for concurrent use.
type Sender struct {
	// Policy is the addresses that may be posted to; nil refuses loopback, link-local and
	// unspecified addresses.
	Policy *AddressPolicy
	// Retry bounds the attempts; the zero value is DefaultRetry.
	Retry Retry

	once   sync.Once
	client *http.Client
}

// Errors of deliveries that no retry fixes.
var (
	errRedirectOtherHost = errors.New("the endpoint redirected to another host, which is not followed (a signature or a webhook's secret path must not reach it)")
	errTooManyRedirects  = errors.New("the endpoint redirected more than 3 times")
	errNotHTTP           = errors.New("the address is not an http:// or https:// URL")
)

func (s *Sender) init() {
	s.once.Do(func() {
		policy := s.Policy
		if policy == nil {
			policy = &AddressPolicy{}
		}
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: policy.control}
		transport := &http.Transport{
			// No proxy: a proxy would dial in the controller's place, past the address policy.
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           32,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}
		s.client = &http.Client{Transport: transport, CheckRedirect: sameHostRedirects}
		if s.Retry.Attempts <= 0 {
			s.Retry = DefaultRetry
		}
	})
}

// sameHostRedirects follows up to 3 redirects, all to the scheme and host of the first request:
// the X-Signature header (and a body made for this endpoint) never goes to another host.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errTooManyRedirects
	}
	if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
		return errRedirectOtherHost
	}
	return nil
}

// ParseAddress checks that raw is an http(s) URL and, when its host is an IP address, that the
// policy allows it (a host name is checked when it is dialed). Its errors do not quote raw.
func (s *Sender) ParseAddress(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errNotHTTP
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		policy := s.Policy
		if policy == nil {
			policy = &AddressPolicy{}
		}
		if err := policy.Check(addr); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// Deliver posts the event to the target, retrying network errors, 429 and 5xx answers with
// exponential backoff (honouring Retry-After) until the attempts are spent or ctx ends.
func (s *Sender) Deliver(ctx context.Context, t Target, ev Message) Outcome {
	s.init()
	if _, err := s.ParseAddress(t.URL); err != nil {
		return Outcome{Err: err}
	}
	body, err := ev.Body(t.Type)
	if err != nil {
		return Outcome{Err: err}
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if d, ok := ev.(Deduplicated); ok && t.Existing != "" && s.has(ctx, t, d, timeout) {
		return Outcome{Duplicate: true}
	}
	var out Outcome
	for attempt := 1; ; attempt++ {
		out.Attempts = attempt
		var retryAfter time.Duration
		var retry bool
		out.Status, retryAfter, retry, out.Err = s.post(ctx, t, body, timeout)
		if out.Err == nil || !retry || attempt >= s.Retry.Attempts {
			if out.Err != nil && retry {
				out.Err = fmt.Errorf("%w (after %d attempts)", out.Err, attempt)
			}
			return out
		}
		wait := s.Retry.BaseDelay << (attempt - 1)
		if wait > s.Retry.MaxDelay || wait <= 0 {
			wait = s.Retry.MaxDelay
		}
		if retryAfter > 0 {
			wait = min(retryAfter, s.Retry.MaxRetryAfter)
		}
		select {
		case <-ctx.Done():
			out.Err = fmt.Errorf("%w (stopped after %d attempts: the controller is stopping)", out.Err, attempt)
			return out
		case <-time.After(wait):
		}
	}
}

// post makes one request. It says whether a failure is worth retrying and how long the endpoint
// asked to wait.
func (s *Sender) post(ctx context.Context, t Target, body []byte, timeout time.Duration) (status int, retryAfter time.Duration, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, false, errNotHTTP
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gating-controller")
	if t.Type == TypeGenericHMAC {
		mac := hmac.New(sha256.New, t.Token)
		mac.Write(body)
		req.Header.Set(SignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, 0, retryable(err), safeError(ctx, err, timeout)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseSize))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, false, nil
	}
	err = fmt.Errorf("the endpoint answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), true, err
	}
	return resp.StatusCode, 0, false, err
}

// has asks the endpoint, once, whether it has the message already. An answer that does not say
// so (an error included) is no: the message is posted.
func (s *Sender) has(ctx context.Context, t Target, d Deduplicated, timeout time.Duration) bool {
	if _, err := s.ParseAddress(t.Existing); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Existing, nil)
	if err != nil {
		return false
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "gating-controller")
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxListSize))
	return err == nil && resp.StatusCode == http.StatusOK && d.Delivered(answer)
}

// retryable: network errors are, refused addresses and refused redirects are not.
func retryable(err error) bool {
	var refused *RefusedAddressError
	return !errors.As(err, &refused) && !errors.Is(err, errRedirectOtherHost) && !errors.Is(err, errTooManyRedirects)
}

// safeError is the client's error without the URL that net/http puts in it (*url.Error): the
// underlying cause, a refused address alone, or the timeout.
func safeError(ctx context.Context, err error, timeout time.Duration) error {
	var refused *RefusedAddressError
	if errors.As(err, &refused) {
		return refused
	}
	if errors.Is(err, errRedirectOtherHost) {
		return errRedirectOtherHost
	}
	if errors.Is(err, errTooManyRedirects) {
		return errTooManyRedirects
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", timeout)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var operr *net.OpError
	if errors.As(err, &operr) {
		return fmt.Errorf("connection failed: %v", operr.Err)
	}
	return fmt.Errorf("request failed: %v", err)
}

// parseRetryAfter reads Retry-After: seconds, or an HTTP date; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
