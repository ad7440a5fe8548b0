package webhook

import (
	"context"
	"errors"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

// Bounds are what a receiver lets its callers spend; each receiver has its own defaults, flags
// and words for them.
type Bounds struct {
	// MaxBody is the largest body read; a larger one gets 413.
	MaxBody int64
	// RateInterval and Burst are each object's budget of authenticated requests (Limiters).
	RateInterval time.Duration
	Burst        int
	// FailureInterval, FailureBurst and MaxSources are each source address's budget of failed
	// attempts (SourceFailures).
	FailureInterval time.Duration
	FailureBurst    int
	MaxSources      int
	// ReplayWindow and MaxRemembered bound the replay memory (SeenRequests).
	ReplayWindow  time.Duration
	MaxRemembered int
}

// Checks are the checks both receivers make of a request, written once: the body's size, the
// failed attempts of its source, the token of the object's Secret, the object's rate and the
// replay memory. Each receiver makes them in its own order, and says what a request means.
type Checks struct {
	bounds   Bounds
	seen     *SeenRequests
	rates    *Limiters
	failures *SourceFailures
	tokens   *KnownTokens
}

// NewChecks makes the checks of one receiver; with claims, the replay memory is shared with the
// other replicas.
func NewChecks(b Bounds, claims *Claims) *Checks {
	c := &Checks{
		bounds:   b,
		seen:     NewSeenRequests(b.ReplayWindow, b.MaxRemembered),
		rates:    NewLimiters(b.RateInterval, b.Burst),
		failures: NewSourceFailures(b.FailureInterval, b.FailureBurst, b.MaxSources),
		tokens:   NewKnownTokens(),
	}
	if claims != nil {
		c.seen.Share(claims)
	}
	return c
}

// ReadBody reads the request's body, at most MaxBody of it (ReadBody answers otherwise).
func (c *Checks) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return ReadBody(w, r, c.bounds.MaxBody)
}

// KnownCaller tells whether the request carries the token last read from secret (valid checks
// it against a token), and whether secret was read at all. A known caller's request is checked
// whatever its source address did before: an object's callers often share an address with
// others (an Ingress controller, a NAT).
func (c *Checks) KnownCaller(secret types.NamespacedName, valid func(token []byte) bool) (caller, read bool) {
	known, read := c.tokens.Get(secret)
	return len(known) > 0 && valid(known), read
}

// RefusedSource answers 429 to a request whose source address has spent its failed attempts,
// and says whether it did.
func (c *Checks) RefusedSource(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	if !c.failures.Exhausted(SourceOf(r.RemoteAddr), now) {
		return false
	}
	TooManyFailures(w, c.bounds.FailureInterval)
	return true
}

// Fail counts a failed attempt of the request's source address.
func (c *Checks) Fail(r *http.Request, now time.Time) {
	c.failures.Fail(SourceOf(r.RemoteAddr), now)
}

// Token reads the token under key of the Secret secret, and remembers it for KnownCaller. A
// missing Secret is an empty token, with the NotFound error; a missing key is an empty token.
func (c *Checks) Token(ctx context.Context, reader client.Reader, secret types.NamespacedName, key string) ([]byte, error) {
	data, err := secrets.Data(ctx, reader, secret.Namespace, secret.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	token := data[key]
	c.tokens.Store(secret, token)
	return token, err
}

// AllowRate spends one request of the object's budget. Once it is spent, it answers 429 with
// the Retry-After of one more request and msg, and returns false.
func (c *Checks) AllowRate(w http.ResponseWriter, object types.NamespacedName, now time.Time, msg string) bool {
	if c.rates.Allow(object, now) {
		return true
	}
	TooMany(w, c.bounds.RateInterval, msg)
	return false
}

// Seen records an accepted request by key in the replay memory (SeenRequests.Seen).
func (c *Checks) Seen(ctx context.Context, key [32]byte, now time.Time) (replay, full bool, err error) {
	return c.seen.Seen(ctx, key, now)
}

// Forget drops the keys of a request that was not handled: its sender may send it again.
func (c *Checks) Forget(ctx context.Context, keys ...[32]byte) error {
	var errs []error
	for _, k := range keys {
		errs = append(errs, c.seen.Drop(ctx, k))
	}
	return errors.Join(errs...)
}
