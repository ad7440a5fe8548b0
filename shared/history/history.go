package history

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxHistory is how many snapshots status.history keeps, as flux-operator's.
const MaxHistory = 5

// History is the last reconciliations of an object that applies (a ResourceSet, a
// ManifestGeneration), one snapshot per outcome (what was built, and how it ended), the most
// recent first.
type History []Snapshot

// Snapshot is one outcome: the first and the last time a reconciliation ended with it, and how
// often.
type Snapshot struct {
	// Digest of what the reconciliation built: the applied revision, or the digest of the spec
	// when the build failed.
	// +required
	Digest string `json:"digest"`

	// FirstReconciled is when a reconciliation first ended with this outcome.
	// +required
	FirstReconciled metav1.Time `json:"firstReconciled"`

	// LastReconciled is when one last did.
	// +required
	LastReconciled metav1.Time `json:"lastReconciled"`

	// LastReconciledDuration is how long the last one took.
	// +required
	LastReconciledDuration metav1.Duration `json:"lastReconciledDuration"`

	// LastReconciledStatus is the reason of its Ready condition (ReconciliationSucceeded,
	// HealthCheckFailed, BuildFailed, ...).
	// +required
	LastReconciledStatus string `json:"lastReconciledStatus"`

	// TotalReconciliations is how many reconciliations ended with this outcome.
	// +required
	TotalReconciliations int64 `json:"totalReconciliations"`

	// Metadata of the outcome: the number of inputs and of resources.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Record counts a reconciliation that ended at `at` after `took`: the snapshot of the same
// digest and status is updated and moved first, or a new one is put first; the oldest beyond
// MaxHistory go.
func (h *History) Record(digest, status string, at time.Time, took time.Duration, metadata map[string]string) {
	entry := Snapshot{
		Digest: digest, LastReconciledStatus: status, FirstReconciled: metav1.NewTime(at), TotalReconciliations: 1,
	}
	rest := make(History, 0, len(*h)+1)
	for _, s := range *h {
		if s.Digest == digest && s.LastReconciledStatus == status {
			entry.FirstReconciled, entry.TotalReconciliations = s.FirstReconciled, s.TotalReconciliations+1
			continue
		}
		rest = append(rest, s)
	}
	entry.LastReconciled = metav1.NewTime(at)
	entry.LastReconciledDuration = metav1.Duration{Duration: took}
	entry.Metadata = metadata
	*h = append(History{entry}, rest...)
	if len(*h) > MaxHistory {
		*h = (*h)[:MaxHistory]
	}
}

// Outcome records a reconciliation of an object whose spec is spec: by the revision it applied,
// or, when it applied nothing (its build failed), by the digest of the spec.
func (h *History) Outcome(revision string, spec any, reason string, took time.Duration, metadata map[string]string) {
	if revision == "" {
		b, err := json.Marshal(spec)
		if err != nil {
			return
		}
		revision = fmt.Sprintf("sha256:%x", sha256.Sum256(b))
	}
	h.Record(revision, reason, time.Now(), took, metadata)
}
