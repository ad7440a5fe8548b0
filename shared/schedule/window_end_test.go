package schedule

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// ts parses an RFC 3339 instant.
func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestDSTWindowEnds(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	w := &windowSet{loc: london}
	tests := []struct {
		name     string
		start    string
		duration time.Duration
		end      string
	}{
		// The clock jumps from 00:59:59 to 02:00: an end at 01:30 local comes when it jumps.
		{"end in the spring-forward gap", "2026-03-29T00:00:00Z", 90 * time.Minute, "2026-03-29T01:00:00Z"},
		{"end after the gap", "2026-03-29T00:00:00Z", 150 * time.Minute, "2026-03-29T01:30:00Z"},
		// 00:30 BST + 1h = 01:30 local, first reached at 00:30Z... the first 01:30 (BST).
		{"end at the first repeated reading", "2026-10-24T23:30:00Z", time.Hour, "2026-10-25T00:30:00Z"},
		// 01:30 GMT (second occurrence) + 10m = 01:40 GMT, not the earlier 01:40 BST.
		{"end after a second-occurrence activation", "2026-10-25T01:30:00Z", 10 * time.Minute, "2026-10-25T01:40:00Z"},
		// 01:50 BST + 20m = 02:10 local, which only comes after the repeated hour.
		{"end past the repeated hour", "2026-10-25T00:50:00Z", 20 * time.Minute, "2026-10-25T02:10:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w.d = tt.duration
			a := ts(tt.start)
			_, off := a.In(london).Zone()
			g.Expect(w.end(a, int64(off))).To(Equal(ts(tt.end).UTC()))
		})
	}
}

// Away from readings that are skipped or repeated, a window's end is exactly time.Date's
// normalisation of activation + duration on the local clock.
func TestWindowEndIsTimeDate(t *testing.T) {
	g := NewWithT(t)
	checked, skipped := 0, 0
	for _, tz := range []string{"Europe/London", "America/New_York", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(tz)
		g.Expect(err).NotTo(HaveOccurred())
		for _, d := range []time.Duration{time.Hour, 90 * time.Minute, 24 * time.Hour, 63 * time.Hour, 1500 * time.Millisecond} {
			w := &windowSet{loc: loc, d: d}
			for _, from := range []string{"2026-03-05T00:00:00Z", "2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z", "2026-09-30T00:00:00Z", "2026-10-22T00:00:00Z", "2026-10-29T00:00:00Z"} {
				start := ts(from)
				for a := start; a.Before(start.Add(5 * 24 * time.Hour)); a = a.Add(11 * time.Minute) {
					l := a.In(loc)
					want := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), int(d), loc)
					reading := func(x time.Time) string { return x.In(loc).Format("2006-01-02 15:04:05.000") }
					wanted := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), int(d), time.UTC).Format("2006-01-02 15:04:05.000")
					if reading(want) != wanted || reading(want.Add(-time.Hour)) == wanted || reading(want.Add(time.Hour)) == wanted ||
						reading(want.Add(-30*time.Minute)) == wanted || reading(want.Add(30*time.Minute)) == wanted {
						skipped++
						continue // skipped or repeated reading
					}
					checked++
					_, off := l.Zone()
					g.Expect(w.end(a, int64(off))).To(BeTemporally("==", want), "%s: %s + %s", tz, l, d)
				}
			}
		}
	}
	g.Expect(skipped).To(BeNumerically(">", 0))
	g.Expect(checked).To(BeNumerically(">", 100*skipped))
}
