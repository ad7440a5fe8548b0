package keeper

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	ss "github.com/sluice-gitops/sluice/shared/schedule"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

const (
	closed = ss.Closed
	opened = ss.Opened
	none   = ss.None
)

func TestKeeperUTC(t *testing.T) {
	tests := []struct {
		name   string
		spec   v1alpha1.GateKeeperSpec
		points []point
	}{
		{
			name: "change freeze: Black Friday and Christmas",
			spec: specOf("", []string{"* * 20-30 11 *", "* * 15-31 12 *"}, []string{}),
			points: []point{
				{"2026-01-01T00:00:00Z", none, "2026-11-20T00:00:00Z"},
				{"2026-11-19T23:59:59.999Z", none, "2026-11-20T00:00:00Z"},
				{"2026-11-20T00:00:00Z", closed, "2026-12-01T00:00:00Z"},
				{"2026-11-22T10:00:00Z", closed, "2026-12-01T00:00:00Z"},
				{"2026-11-30T23:59:59Z", closed, "2026-12-01T00:00:00Z"},
				{"2026-12-01T00:00:00Z", none, "2026-12-15T00:00:00Z"},
				{"2026-12-05T00:00:00Z", none, "2026-12-15T00:00:00Z"},
				{"2026-12-31T23:59:30Z", closed, "2027-01-01T00:00:00Z"},
				{"2027-01-01T00:00:00Z", none, "2027-11-20T00:00:00Z"},
			},
		},
		{
			name: "closed beats an overlapping opened expression",
			spec: specOf("", []string{"* 12 * * *"}, []string{"* 8-19 * * *"}),
			points: []point{
				{"2026-05-04T07:00:00Z", none, "2026-05-04T08:00:00Z"},
				{"2026-05-04T10:00:00Z", opened, "2026-05-04T12:00:00Z"},
				{"2026-05-04T12:30:00Z", closed, "2026-05-04T13:00:00Z"},
				{"2026-05-04T13:00:00Z", opened, "2026-05-04T20:00:00Z"},
				{"2026-05-04T20:00:00Z", none, "2026-05-05T08:00:00Z"},
			},
		},
		{
			name: "a single minute",
			spec: specOf("", nil, []string{"0 9 * * *"}),
			points: []point{
				{"2026-05-04T08:59:59.999Z", none, "2026-05-04T09:00:00Z"},
				{"2026-05-04T09:00:00Z", opened, "2026-05-04T09:01:00Z"},
				{"2026-05-04T09:00:59.999Z", opened, "2026-05-04T09:01:00Z"},
				{"2026-05-04T09:01:00Z", none, "2026-05-05T09:00:00Z"},
			},
		},
		{
			name: "29 February",
			spec: specOf("", []string{"0 0 29 2 *"}, nil),
			points: []point{
				{"2026-03-01T00:00:00Z", none, "2028-02-29T00:00:00Z"},
				{"2028-02-29T00:00:30Z", closed, "2028-02-29T00:01:00Z"},
				{"2028-02-29T00:01:00Z", none, "2032-02-29T00:00:00Z"},
				// 2100 is not a leap year: the next 29 February is beyond the horizon.
				{"2097-01-01T00:00:00Z", none, ""},
			},
		},
		{
			name: "day of month OR day of week when both are restricted",
			spec: specOf("", []string{"0 0 13 * FRI"}, nil),
			points: []point{
				// Monday 2026-04-13 (the 13th), then Friday 2026-04-17.
				{"2026-04-12T00:00:00Z", none, "2026-04-13T00:00:00Z"},
				{"2026-04-13T00:01:00Z", none, "2026-04-17T00:00:00Z"},
			},
		},
		{
			name: "day of month AND day of week when one is a star step",
			spec: specOf("", []string{"0 0 */2 * FRI"}, nil),
			points: []point{
				// */2 carries no star bit in robfig (step > 1), so this is OR: the 1st, 3rd, ... or a Friday.
				{"2026-04-01T00:01:00Z", none, "2026-04-03T00:00:00Z"},
			},
		},
		{
			name: "descriptor",
			spec: specOf("", []string{"@weekly"}, nil),
			points: []point{
				{"2026-04-01T00:00:00Z", none, "2026-04-05T00:00:00Z"},
			},
		},
		{
			name: "weekend window",
			spec: specOf("", nil, nil, window("0 18 * * FRI", "63h", v1alpha1.GateClosed)),
			points: []point{
				{"2026-11-06T17:59:59Z", none, "2026-11-06T18:00:00Z"},
				{"2026-11-06T18:00:00Z", closed, "2026-11-09T09:00:00Z"},
				{"2026-11-08T12:00:00Z", closed, "2026-11-09T09:00:00Z"},
				{"2026-11-09T08:59:59Z", closed, "2026-11-09T09:00:00Z"},
				{"2026-11-09T09:00:00Z", none, "2026-11-13T18:00:00Z"},
			},
		},
		{
			name: "overlapping windows merge",
			spec: specOf("", nil, nil,
				window("0 8 * * *", "4h", v1alpha1.GateOpened),
				window("0 10 * * *", "4h", v1alpha1.GateOpened)),
			points: []point{
				{"2026-05-04T07:00:00Z", none, "2026-05-04T08:00:00Z"},
				{"2026-05-04T09:00:00Z", opened, "2026-05-04T14:00:00Z"},
				{"2026-05-04T11:00:00Z", opened, "2026-05-04T14:00:00Z"},
				{"2026-05-04T14:00:00Z", none, "2026-05-05T08:00:00Z"},
			},
		},
		{
			name: "adjacent windows merge",
			spec: specOf("", nil, nil,
				window("0 8 * * *", "2h", v1alpha1.GateOpened),
				window("0 10 * * *", "2h", v1alpha1.GateOpened)),
			points: []point{
				{"2026-05-04T09:00:00Z", opened, "2026-05-04T12:00:00Z"},
			},
		},
		{
			name: "a window's own activations merge",
			spec: specOf("", nil, nil, window("0 9-17 * * *", "1h", v1alpha1.GateOpened)),
			points: []point{
				{"2026-05-04T08:00:00Z", none, "2026-05-04T09:00:00Z"},
				{"2026-05-04T10:30:00Z", opened, "2026-05-04T18:00:00Z"},
				{"2026-05-04T17:59:00Z", opened, "2026-05-04T18:00:00Z"},
			},
		},
		{
			name: "overlapping activations never end",
			spec: specOf("", []string{}, nil, window("0 * * * *", "90m", v1alpha1.GateClosed)),
			points: []point{
				{"2026-05-04T10:30:00Z", closed, ""},
			},
		},
		{
			name: "windows shorter than a minute do not touch",
			spec: specOf("", nil, nil, window("* * * * *", "30s", v1alpha1.GateClosed)),
			points: []point{
				{"2026-05-04T10:00:10Z", closed, "2026-05-04T10:00:30Z"},
				{"2026-05-04T10:00:45Z", none, "2026-05-04T10:01:00Z"},
			},
		},
		{
			name: "an expression bridges a window",
			spec: specOf("", []string{"* 12-13 * * *"}, nil,
				window("0 10 * * *", "2h", v1alpha1.GateClosed),
				window("0 14 * * *", "1h", v1alpha1.GateClosed)),
			points: []point{
				{"2026-05-04T10:00:00Z", closed, "2026-05-04T15:00:00Z"},
				{"2026-05-04T12:30:00Z", closed, "2026-05-04T15:00:00Z"},
			},
		},
		{
			name: "closed window inside an opened window",
			spec: specOf("", nil, nil,
				window("0 8 * * MON-FRI", "10h", v1alpha1.GateOpened),
				window("0 12 * * *", "30m", v1alpha1.GateClosed)),
			points: []point{
				{"2026-05-04T09:00:00Z", opened, "2026-05-04T12:00:00Z"},
				{"2026-05-04T12:10:00Z", closed, "2026-05-04T12:30:00Z"},
				{"2026-05-04T12:30:00Z", opened, "2026-05-04T18:00:00Z"},
				{"2026-05-04T18:00:00Z", none, "2026-05-05T08:00:00Z"},
				{"2026-05-09T09:00:00Z", none, "2026-05-09T12:00:00Z"}, // Saturday
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			expectKeeper(g, mustParse(t, tt.spec), tt.points)
		})
	}
}

func TestEmptySpec(t *testing.T) {
	g := NewWithT(t)
	for _, spec := range []v1alpha1.GateKeeperSpec{
		{Gate: "g"},
		{Gate: "g", Type: v1alpha1.CronExpression, TimeZone: "Europe/London", CronJob: &v1alpha1.CronJob{}},
	} {
		k, err := Parse(spec)
		g.Expect(err).NotTo(HaveOccurred())
		expectKeeper(g, k, []point{
			{"2026-05-04T09:00:00Z", none, ""},
			{"1990-01-01T00:00:00Z", none, ""},
		})
	}
}

func TestLocation(t *testing.T) {
	g := NewWithT(t)
	g.Expect(mustParse(t, specOf("", nil, nil)).Location().String()).To(Equal("UTC"))
	g.Expect(mustParse(t, specOf("Europe/London", nil, nil)).Location().String()).To(Equal("Europe/London"))
}

func TestHostile(t *testing.T) {
	g := NewWithT(t)
	for tz, nextDay := range map[string]string{"": "2026-05-05T01:00:00Z", "Europe/London": "2026-05-05T00:00:00Z"} {
		k := mustParse(t, specOf(tz, []string{"* * * * *"}, nil, window("* * * * *", "8760h", v1alpha1.GateClosed)))
		expectKeeper(g, k, []point{{"2026-05-04T09:00:00Z", closed, ""}})

		// The window alone: active forever once it has started.
		k = mustParse(t, specOf(tz, nil, nil, window("* * * * *", "8760h", v1alpha1.GateClosed)))
		expectKeeper(g, k, []point{{"2026-05-04T09:00:30Z", closed, ""}})

		// 64 expressions, each some minutes of every day: the union still changes daily.
		var exprs []string
		for i := range 64 {
			exprs = append(exprs, []string{"* 1 * * *", "*/7 2-3 * * MON", "0 4 1-15 * *", "30 5 * 1-6 *"}[i%4])
		}
		exprs[63] = "* 6 * * *"
		k = mustParse(t, specOf(tz, exprs, []string{"* * * * *"}))
		expectKeeper(g, k, []point{
			{"2026-05-04T07:30:00Z", opened, nextDay}, // 01:00 local
		})
	}
}

func TestExtremeInstants(t *testing.T) {
	g := NewWithT(t)
	k := mustParse(t, specOf("Europe/London", []string{"* * 20-30 11 *"}, []string{"0 9 * * *"},
		window("0 18 * * FRI", "63h", v1alpha1.GateClosed)))
	for _, at := range []time.Time{{}, ts("1800-06-01T12:00:00Z"), ts("9999-12-31T23:59:59Z")} {
		_ = k.At(at)
		n, ok := k.NextTransition(at)
		if ok {
			g.Expect(n.After(at)).To(BeTrue())
			g.Expect(n.Sub(at)).To(BeNumerically("<=", Horizon))
		}
	}
	// A window longer than the horizon.
	k = mustParse(t, specOf("", nil, nil, window("0 0 1 1 *", "2000000h", v1alpha1.GateClosed)))
	expectKeeper(g, k, []point{
		{"2025-12-31T23:59:00Z", closed, ""},
	})
}

// Outside its schedules, a keeper of one state holds its gate in the other state; a keeper of
// both states, or of none, leaves it to the gate's default.
func TestHolds(t *testing.T) {
	g := NewWithT(t)
	inside, outside := ts("2026-11-22T10:00:00Z"), ts("2026-12-05T10:00:00Z")
	freeze := mustParse(t, specOf("", []string{"* * 20-30 11 *"}, nil))
	g.Expect(freeze.Holds(inside)).To(Equal(closed))
	g.Expect(freeze.Holds(outside)).To(Equal(opened))
	g.Expect(freeze.At(outside)).To(Equal(none))

	office := mustParse(t, specOf("", nil, []string{"* 9-16 * * MON-FRI"}))
	g.Expect(office.Holds(ts("2026-11-23T10:00:00Z"))).To(Equal(opened))
	g.Expect(office.Holds(ts("2026-11-22T10:00:00Z"))).To(Equal(closed)) // a Sunday

	both := mustParse(t, specOf("", []string{"* * 20-30 11 *"}, []string{"* 9-16 * * *"}))
	g.Expect(both.Holds(ts("2026-12-05T20:00:00Z"))).To(Equal(none))
	g.Expect(mustParse(t, specOf("", nil, nil)).Holds(inside)).To(Equal(none))
}
