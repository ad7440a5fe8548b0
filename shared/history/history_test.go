package history

import (
	"testing"
	"time"
)

func TestHistoryRecord(t *testing.T) {
	var h History
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	h.Record("sha256:a", "ReconciliationSucceeded", at, time.Second, map[string]string{"resources": "3"})
	h.Record("sha256:b", "HealthCheckFailed", at.Add(time.Minute), 2*time.Second, nil)
	h.Record("sha256:a", "ReconciliationSucceeded", at.Add(2*time.Minute), 3*time.Second, map[string]string{"resources": "3"})
	if len(h) != 2 || h[0].Digest != "sha256:a" || h[0].TotalReconciliations != 2 ||
		!h[0].FirstReconciled.Time.Equal(at) || !h[0].LastReconciled.Time.Equal(at.Add(2*time.Minute)) ||
		h[0].LastReconciledDuration.Duration != 3*time.Second || h[1].Digest != "sha256:b" {
		t.Fatalf("a repeated outcome is counted and moved first: %+v", h)
	}
	// The same digest with another status is another outcome.
	h.Record("sha256:a", "HealthCheckFailed", at.Add(3*time.Minute), time.Second, nil)
	if len(h) != 3 || h[0].TotalReconciliations != 1 {
		t.Fatalf("another status is another snapshot: %+v", h)
	}
	for i := range 10 {
		h.Record(string(rune('c'+i)), "ReconciliationSucceeded", at.Add(time.Duration(10+i)*time.Minute), time.Second, nil)
	}
	if len(h) != MaxHistory || h[0].Digest != string(rune('c'+9)) || h[MaxHistory-1].Digest != string(rune('c'+5)) {
		t.Fatalf("the %d most recent are kept, newest first: %+v", MaxHistory, h)
	}
}
