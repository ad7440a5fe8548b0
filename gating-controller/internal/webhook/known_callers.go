package webhook

import (
	"crypto/sha256"
	"time"
)

// KnownCallerTTL is how long a token the API server accepted is known: about the life of a
// ServiceAccount or OIDC token.
const KnownCallerTTL = time.Hour

// KnownCallers are the SHA-256 digests of the bearer tokens the API server accepted recently,
// as KnownTokens are the objects' tokens: they never authenticate a request (the API server is
// asked again each time), they let a caller through when their source address has spent its
// failed attempts, as callers behind one Ingress controller or NAT share it with whoever floods
// it. Only the digest is kept, and only of tokens the API server accepted, so callers without
// one cannot grow the set; it holds at most maxEntries.
type KnownCallers struct{ set *digestSet }

// NewKnownCallers is an empty set of at most maxEntries tokens.
func NewKnownCallers(maxEntries int) *KnownCallers {
	return &KnownCallers{set: newDigestSet(maxEntries)}
}

// Known tells whether the API server accepted token within the last KnownCallerTTL.
func (k *KnownCallers) Known(token string, now time.Time) bool {
	return k.set.holds(sha256.Sum256([]byte(token)), now)
}

// Accepted records that the API server accepted token at now, for KnownCallerTTL from now;
// when the set is full of other tokens still known, it is not recorded.
func (k *KnownCallers) Accepted(token string, now time.Time) {
	k.set.put(sha256.Sum256([]byte(token)), now, KnownCallerTTL)
}
