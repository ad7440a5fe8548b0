package gatereceiver

import (
	"crypto/sha256"
	"sync"
	"time"
)

// knownCallerTTL is how long a token the API server accepted is known: about the life of a
// ServiceAccount or OIDC token.
const knownCallerTTL = time.Hour

// knownCallers are the SHA-256 digests of the bearer tokens the API server accepted recently on
// /approve and /reject, as KnownTokens are the gates' tokens: they never authenticate a request
// (the API server is asked again each time), they let an approver through when their source
// address has spent its failed attempts, as approvers behind one Ingress controller or NAT share
// it with whoever floods it. Only the digest is kept, and only tokens the API server accepted, so
// callers without one cannot grow the set; it holds at most max.
type knownCallers struct {
	mu    sync.Mutex
	max   int
	until map[[32]byte]time.Time
}

func newKnownCallers(maxEntries int) *knownCallers {
	return &knownCallers{max: maxEntries, until: map[[32]byte]time.Time{}}
}

// Known tells whether the API server accepted token within the last knownCallerTTL.
func (k *knownCallers) Known(token string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	until, ok := k.until[sha256.Sum256([]byte(token))]
	return ok && now.Before(until)
}

// Accepted records that the API server accepted token at now; when the set is full of tokens
// still known, it is not recorded.
func (k *knownCallers) Accepted(token string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.until) >= k.max {
		for d, until := range k.until {
			if !now.Before(until) {
				delete(k.until, d)
			}
		}
		if len(k.until) >= k.max {
			return
		}
	}
	k.until[sha256.Sum256([]byte(token))] = now.Add(knownCallerTTL)
}
