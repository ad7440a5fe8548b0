package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// announcements remembers, per gate, the last approval change announced (event and
// notification): a reconcile that reads the gate from a cache not yet showing the status the
// previous one wrote would see the same change again, and announce it twice.
type announcements struct {
	mu   sync.Mutex
	last map[types.UID]string
}

// first records change for the gate and says whether it is new.
func (a *announcements) first(gate types.UID, change string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last[gate] == change {
		return false
	}
	if a.last == nil {
		a.last = map[types.UID]string{}
	}
	a.last[gate] = change
	return true
}
