package gatesapi

import (
	"testing"
	"time"
)

func TestHeldStatus(t *testing.T) {
	if st := HeldStatus(map[string]string{HeldSinceAnnotation: "2026-01-01T00:00:00Z"}); st != nil {
		t.Fatalf("an object without %s has no gates status, got %+v", GatesAnnotation, st)
	}
	if st := HeldStatus(map[string]string{GatesAnnotation: "a"}); st == nil || st.State != GatesOpenState || st.HeldSince != nil {
		t.Fatalf("a bound object nothing holds is open, got %+v", st)
	}
	st := HeldStatus(map[string]string{
		GatesAnnotation:           "a, ns/b",
		HeldSinceAnnotation:       "2026-01-01T10:00:00Z",
		HeldByAnnotation:          "ns/b",
		WaitingRevisionAnnotation: "main@sha1:abc",
	})
	if st == nil || st.State != "closed (ns/b)" || st.WaitingRevision != "main@sha1:abc" ||
		st.HeldSince == nil || !st.HeldSince.Time.Equal(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("held object: got %+v", st)
	}
}
