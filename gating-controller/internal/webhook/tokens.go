package webhook

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// KnownTokens keep the token of each receiver Secret as the receiver last read it (nil when the
// Secret or its token was missing). They never authenticate a request on their own, since the
// Secret is read again for every request that gets that far; they tell the receiver that a
// request comes from a holder of the token, whose request it may check even when its source
// address has spent its failed attempts (an object's callers often share an address with others:
// an Ingress controller, a NAT). The keys are the Secrets that objects name, so callers cannot
// grow the set.
type KnownTokens struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName][]byte
}

// NewKnownTokens is an empty set.
func NewKnownTokens() *KnownTokens {
	return &KnownTokens{byKey: map[types.NamespacedName][]byte{}}
}

// Get returns the token last read from the Secret, and whether the Secret was read at all.
func (k *KnownTokens) Get(secret types.NamespacedName) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	token, ok := k.byKey[secret]
	return token, ok
}

// Store records what the Secret holds now (nil: no Secret or no token).
func (k *KnownTokens) Store(secret types.NamespacedName, token []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byKey[secret] = append([]byte(nil), token...)
}
