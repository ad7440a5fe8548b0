package keeper

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Europe/London in 2026: clocks go forward Sunday 29 March 01:00 GMT -> 02:00 BST (01:00Z) and
// back Sunday 25 October 02:00 BST -> 01:00 GMT (01:00Z).

func TestDSTWeekendWindowAcrossFallBack(t *testing.T) {
	g := NewWithT(t)
	k := mustParse(t, specOf("Europe/London", nil, nil, window("0 18 * * FRI", "63h", v1alpha1.GateClosed)))
	// Friday 18:00 BST is 17:00Z; Monday 09:00 GMT is 09:00Z: 64 hours in absolute time.
	expectKeeper(g, k, []point{
		{"2026-10-23T16:59:59Z", none, "2026-10-23T17:00:00Z"},
		{"2026-10-23T17:00:00Z", closed, "2026-10-26T09:00:00Z"},
		{"2026-10-25T01:30:00Z", closed, "2026-10-26T09:00:00Z"},
		{"2026-10-26T08:59:59Z", closed, "2026-10-26T09:00:00Z"},
		{"2026-10-26T09:00:00Z", none, "2026-10-30T18:00:00Z"}, // next Friday, in GMT
	})
}

func TestDSTWeekendWindowAcrossSpringForward(t *testing.T) {
	g := NewWithT(t)
	k := mustParse(t, specOf("Europe/London", nil, nil, window("0 18 * * FRI", "63h", v1alpha1.GateClosed)))
	// Friday 18:00 GMT to Monday 09:00 BST (08:00Z): 62 hours in absolute time.
	expectKeeper(g, k, []point{
		{"2026-03-27T17:59:59Z", none, "2026-03-27T18:00:00Z"},
		{"2026-03-27T18:00:00Z", closed, "2026-03-30T08:00:00Z"},
		{"2026-03-30T08:00:00Z", none, "2026-04-03T17:00:00Z"},
	})
}

func TestDSTOfficeHoursAcrossSpringForward(t *testing.T) {
	g := NewWithT(t)
	k := mustParse(t, specOf("Europe/London", nil, []string{"* 9-17 * * MON-FRI"}))
	expectKeeper(g, k, []point{
		// Friday 27 March, GMT.
		{"2026-03-27T08:59:00Z", none, "2026-03-27T09:00:00Z"},
		{"2026-03-27T12:00:00Z", opened, "2026-03-27T18:00:00Z"},
		// Over the weekend the next opening is Monday 09:00 BST = 08:00Z, not 09:00Z.
		{"2026-03-28T12:00:00Z", none, "2026-03-30T08:00:00Z"},
		{"2026-03-30T07:59:59Z", none, "2026-03-30T08:00:00Z"},
		{"2026-03-30T08:00:00Z", opened, "2026-03-30T17:00:00Z"},
		{"2026-03-30T08:30:00Z", opened, "2026-03-30T17:00:00Z"},
		{"2026-03-30T17:00:00Z", none, "2026-03-31T08:00:00Z"},
	})
}

func TestDSTSkippedMinutesNeverMatch(t *testing.T) {
	g := NewWithT(t)
	// 01:xx does not exist on 29 March 2026 in London.
	k := mustParse(t, specOf("Europe/London", []string{"30 1 * * *"}, nil))
	expectKeeper(g, k, []point{
		{"2026-03-28T01:30:00Z", closed, "2026-03-28T01:31:00Z"},
		{"2026-03-28T01:31:00Z", none, "2026-03-30T00:30:00Z"}, // 01:30 BST on the 30th
	})
	// A minute range straddling the gap: 00:59 GMT, then 02:00 BST right after.
	k = mustParse(t, specOf("Europe/London", []string{"* 0-2 29 3 *"}, nil))
	expectKeeper(g, k, []point{
		{"2026-03-29T00:59:30Z", closed, "2026-03-29T02:00:00Z"}, // until 03:00 BST
	})
}

func TestDSTRepeatedMinutesMatchTwice(t *testing.T) {
	g := NewWithT(t)
	// 01:xx happens twice on 25 October 2026: 00:00Z-01:00Z (BST) and 01:00Z-02:00Z (GMT).
	k := mustParse(t, specOf("Europe/London", []string{"* 1 * * *"}, nil))
	expectKeeper(g, k, []point{
		{"2026-10-24T23:59:59Z", none, "2026-10-25T00:00:00Z"},
		{"2026-10-25T00:00:00Z", closed, "2026-10-25T02:00:00Z"},
		{"2026-10-25T00:59:59Z", closed, "2026-10-25T02:00:00Z"},
		{"2026-10-25T01:00:00Z", closed, "2026-10-25T02:00:00Z"},
		{"2026-10-25T02:00:00Z", none, "2026-10-26T01:00:00Z"},
	})
	// A single repeated minute is two separate minutes.
	k = mustParse(t, specOf("Europe/London", []string{"30 1 25 10 *"}, nil))
	expectKeeper(g, k, []point{
		{"2026-10-25T00:00:00Z", none, "2026-10-25T00:30:00Z"},
		{"2026-10-25T00:30:00Z", closed, "2026-10-25T00:31:00Z"},
		{"2026-10-25T00:31:00Z", none, "2026-10-25T01:30:00Z"},
		{"2026-10-25T01:30:00Z", closed, "2026-10-25T01:31:00Z"},
	})
	// Windows start at both occurrences too; the wall-clock end of the first one (01:50) comes
	// before the second activation, so they stay apart.
	k = mustParse(t, specOf("Europe/London", nil, nil, window("30 1 25 10 *", "20m", v1alpha1.GateOpened)))
	expectKeeper(g, k, []point{
		{"2026-10-25T00:30:00Z", opened, "2026-10-25T00:50:00Z"},
		{"2026-10-25T00:50:00Z", none, "2026-10-25T01:30:00Z"},
		{"2026-10-25T01:30:00Z", opened, "2026-10-25T01:50:00Z"},
	})
}
