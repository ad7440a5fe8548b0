package keeper

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func TestTransitions(t *testing.T) {
	// at lists transitions as "instant in UTC state", to compare whole timelines at a glance.
	at := func(ts []Transition) []string {
		out := []string{}
		for _, tr := range ts {
			out = append(out, tr.At.UTC().Format(time.RFC3339)+" "+string(tr.Holds))
		}
		return out
	}
	tests := []struct {
		name         string
		spec         v1alpha1.GateKeeperSpec
		from, until  string
		limit        int
		want         []string
		wantComplete bool
	}{
		{
			name:         "the Christmas freeze of the demo, in the 14 days before it ends",
			spec:         specOf("", []string{"* * 25 12 *"}, nil),
			from:         "2026-12-20T00:00:00Z",
			until:        "2027-01-03T00:00:00Z",
			limit:        100,
			want:         []string{"2026-12-25T00:00:00Z closed", "2026-12-26T00:00:00Z opened"},
			wantComplete: true,
		},
		{
			name:         "read in the keeper's zone: Christmas in Berlin starts at 23:00 UTC",
			spec:         specOf("Europe/Berlin", []string{"* * 25 12 *"}, nil),
			from:         "2026-12-20T00:00:00Z",
			until:        "2027-01-03T00:00:00Z",
			limit:        100,
			want:         []string{"2026-12-24T23:00:00Z closed", "2026-12-25T23:00:00Z opened"},
			wantComplete: true,
		},
		{
			name:         "nothing changes within the range",
			spec:         specOf("", []string{"* * 25 12 *"}, nil),
			from:         "2026-06-01T00:00:00Z",
			until:        "2026-06-15T00:00:00Z",
			limit:        100,
			want:         []string{},
			wantComplete: true,
		},
		{
			name:         "until is excluded",
			spec:         specOf("", []string{"* * 25 12 *"}, nil),
			from:         "2026-12-20T00:00:00Z",
			until:        "2026-12-26T00:00:00Z",
			limit:        100,
			want:         []string{"2026-12-25T00:00:00Z closed"},
			wantComplete: true,
		},
		{
			// At is none between the windows; a keeper of opened windows only holds its gate
			// closed there, and the change shows in the keeper's zone across a DST change.
			name: "office hours: windows of one state, the other state outside",
			spec: specOf("America/New_York", nil, nil,
				window("0 9 * * MON-FRI", "8h", v1alpha1.GateOpened)),
			from:  "2026-03-06T00:00:00Z", // a Friday; DST starts Sunday 8 March
			until: "2026-03-10T00:00:00Z",
			limit: 100,
			want: []string{
				"2026-03-06T14:00:00Z opened", "2026-03-06T22:00:00Z closed", // EST, UTC-5
				"2026-03-09T13:00:00Z opened", "2026-03-09T21:00:00Z closed", // EDT, UTC-4
			},
			wantComplete: true,
		},
		{
			name: "a keeper of both states and none between them",
			spec: specOf("", []string{"* 12 * * *"}, []string{"* 8-19 * * *"}),
			from: "2026-05-04T00:00:00Z", until: "2026-05-05T00:00:00Z", limit: 100,
			want: []string{
				"2026-05-04T08:00:00Z opened", "2026-05-04T12:00:00Z closed",
				"2026-05-04T13:00:00Z opened", "2026-05-04T20:00:00Z none",
			},
			wantComplete: true,
		},
		{
			name: "the limit cuts a schedule that changes every other minute",
			spec: specOf("", []string{"*/2 * * * *"}, nil),
			from: "2026-05-04T00:00:30Z", until: "2026-05-05T00:00:00Z", limit: 3,
			want: []string{"2026-05-04T00:01:00Z opened", "2026-05-04T00:02:00Z closed", "2026-05-04T00:03:00Z opened"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			k := mustParse(t, tt.spec)
			got, complete := k.Transitions(ts(tt.from), ts(tt.until), tt.limit)
			g.Expect(at(got)).To(Equal(tt.want))
			g.Expect(complete).To(Equal(tt.wantComplete))
		})
	}
}
