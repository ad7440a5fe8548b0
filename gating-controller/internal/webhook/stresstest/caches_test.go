package stresstest_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// The receivers keep what they learn of callers in caches that every tenant's requests share:
// each object's token as last read from its Secret, the bearer tokens the API server accepted,
// the requests already accepted (replays) and the rate buckets. These stress tests replay the
// class of Argo CD's CVE-2025-55191 (a race in a shared credentials cache) on them: many callers
// at once, of objects that share a name in different namespaces, while entries expire. Each
// caller sees what is its own and nothing that another filled; under the race detector (`make
// test-race`, part of `make test`) there is no data race.
//
// Checked against reintroduced bugs, each failing its subtest:
//   - KnownTokens keyed by the Secret's name alone: a caller of team-b/hook reads team-a's
//     token ("tokens");
//   - KnownTokens.Store keeping the caller's slice instead of a copy: a reader sees the token
//     change after it was stored ("tokens");
//   - SeenRequests.Remember checking and adding in two locked steps: two callers both get "not
//     a replay" for one request ("replays", under -race in 3 runs of 4).

const (
	workers = 32
	rounds  = 200
)

// secretsOf are Secrets that share names across namespaces, as tenants' objects do.
func secretsOf() []types.NamespacedName {
	var s []types.NamespacedName
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		for _, name := range []string{"hook", "github", "harbor"} {
			s = append(s, types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	return s
}

func TestReceiverCachesUnderConcurrency(t *testing.T) {
	t.Run("tokens", func(t *testing.T) {
		t.Parallel()
		known := webhook.NewKnownTokens()
		secrets := secretsOf()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				buf := make([]byte, 0, 64)
				for r := range rounds {
					s := secrets[(w+r)%len(secrets)]
					if w%2 == 0 {
						// A writer reads a new token for the Secret, then reuses its buffer.
						buf = fmt.Appendf(buf[:0], "%s#%d", s, r)
						known.Store(s, buf)
						buf = append(buf[:0], "overwritten-by-the-writer"...)
						continue
					}
					token, read := known.Get(s)
					if read && !bytes.HasPrefix(token, []byte(s.String()+"#")) {
						t.Errorf("the token of %s is %q: not one stored for it", s, token)
					}
				}
			})
		}
		wg.Wait()
		for _, s := range secrets {
			if token, read := known.Get(s); read && !bytes.HasPrefix(token, []byte(s.String()+"#")) {
				t.Errorf("after the run, the token of %s is %q", s, token)
			}
		}
	})

	t.Run("callers", func(t *testing.T) {
		t.Parallel()
		// A small set, so that it fills and its entries expire under the callers.
		callers := webhook.NewKnownCallers(16)
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var wg sync.WaitGroup
		var knownOnce atomic.Int64
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					now := epoch.Add(time.Duration(r) * webhook.KnownCallerTTL / 50)
					accepted := fmt.Sprintf("accepted-%d-%d", w, r)
					callers.Accepted(accepted, now)
					if callers.Known(accepted, now) {
						knownOnce.Add(1)
					}
					// A token the API server never accepted is never known, whoever else was.
					if refused := fmt.Sprintf("refused-%d-%d", w, r); callers.Known(refused, now) {
						t.Errorf("%s is known, but the API server never accepted it", refused)
					}
					if callers.Known(accepted, now.Add(webhook.KnownCallerTTL)) {
						t.Errorf("%s is known after its TTL", accepted)
					}
				}
			})
		}
		wg.Wait()
		if knownOnce.Load() == 0 {
			t.Error("no accepted token was ever known: the set keeps nothing")
		}
	})

	t.Run("replays", func(t *testing.T) {
		t.Parallel()
		seen := webhook.NewSeenRequests(time.Minute, rounds*2)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var firsts [rounds]atomic.Int64
		var start sync.WaitGroup
		start.Add(1)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				start.Wait()
				// Every worker sends every request: each must be accepted exactly once.
				for r := range rounds {
					replay, full := seen.Remember(sha256.Sum256(fmt.Appendf(nil, "request-%d", r)), now)
					if full {
						t.Errorf("the replay memory is full at %d requests of %d", r, rounds*2)
					}
					if !replay {
						firsts[r].Add(1)
					}
				}
			})
		}
		start.Done()
		wg.Wait()
		for r := range firsts {
			if n := firsts[r].Load(); n != 1 {
				t.Errorf("request %d was accepted %d times, want once", r, n)
			}
		}
	})

	t.Run("rates", func(t *testing.T) {
		t.Parallel()
		const burst = 5
		limits := webhook.NewLimiters(time.Hour, burst)
		failures := webhook.NewSourceFailures(time.Hour, burst, 64)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		secrets := secretsOf()
		allowed := make([]atomic.Int64, len(secrets))
		var start sync.WaitGroup
		start.Add(1)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				start.Wait()
				for r := range rounds {
					i := r % len(secrets)
					if limits.Allow(secrets[i], now) {
						allowed[i].Add(1)
					}
					// Failures of one source spend its bucket only.
					failures.Fail(netip.MustParsePrefix(fmt.Sprintf("192.0.2.%d/32", w)), now)
				}
			})
		}
		start.Done()
		wg.Wait()
		for i, s := range secrets {
			if n := allowed[i].Load(); n != burst {
				t.Errorf("%s let %d requests through at one instant, want its burst of %d", s, n, burst)
			}
		}
		for w := range workers {
			if src := netip.MustParsePrefix(fmt.Sprintf("192.0.2.%d/32", w)); !failures.Exhausted(src, now) {
				t.Errorf("source %s failed %d times and is not exhausted", src, rounds)
			}
		}
		if other := netip.MustParsePrefix("198.51.100.1/32"); failures.Exhausted(other, now) {
			t.Errorf("source %s never failed and is exhausted", other)
		}
	})
}
