package keeper

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		spec v1alpha1.GateKeeperSpec
		want []string // substrings of the error
	}{
		{
			name: "bad closed expression",
			spec: specOf("", []string{"* * 20-30 11 *", "* * 40 11 *"}, nil),
			want: []string{"spec.cronjob.closed[1]: invalid cron expression '* * 40 11 *': end of range (40) above maximum (31)"},
		},
		{
			name: "bad opened expression",
			spec: specOf("", nil, []string{"* * * *"}),
			want: []string{"spec.cronjob.opened[0]: invalid cron expression '* * * *': expected exactly 5 fields"},
		},
		{
			name: "empty expression",
			spec: specOf("", []string{""}, nil),
			want: []string{"spec.cronjob.closed[0]: invalid cron expression '': empty spec string"},
		},
		{
			name: "own time zone",
			spec: specOf("", []string{"CRON_TZ=Europe/Paris 0 9 * * *"}, []string{"TZ=UTC"}),
			want: []string{
				"spec.cronjob.closed[0]: cron expression 'CRON_TZ=Europe/Paris 0 9 * * *' sets its own time zone",
				"spec.cronjob.opened[0]: cron expression 'TZ=UTC' sets its own time zone: remove the TZ= prefix and set spec.timeZone instead",
			},
		},
		{
			name: "@every",
			spec: specOf("", nil, []string{"@every 1h"}),
			want: []string{"spec.cronjob.opened[0]: unsupported cron expression '@every 1h'"},
		},
		{
			name: "unknown time zone",
			spec: specOf("Mars/Olympus", nil, nil),
			want: []string{"spec.timeZone: unknown time zone 'Mars/Olympus'"},
		},
		{
			name: "the controller's local zone",
			spec: specOf("Local", nil, nil),
			want: []string{"spec.timeZone: unknown time zone 'Local'"},
		},
		{
			name: "unsupported type",
			spec: v1alpha1.GateKeeperSpec{Gate: "g", Type: "x"},
			want: []string{"spec.type: unsupported type 'x' (only cronexpression)"},
		},
		{
			name: "bad window schedule",
			spec: specOf("", nil, nil, window("0 25 * * *", "1h", v1alpha1.GateClosed)),
			want: []string{"spec.windows[0].schedule: invalid cron expression '0 25 * * *': end of range (25) above maximum (23)"},
		},
		{
			name: "bad window state",
			spec: specOf("", nil, nil, window("0 18 * * FRI", "1h", v1alpha1.GateClosed), window("0 18 * * FRI", "1h", "ajar")),
			want: []string{"spec.windows[1].state: must be opened or closed, got 'ajar'"},
		},
		{
			name: "missing window state",
			spec: specOf("", nil, nil, window("0 18 * * FRI", "1h", "")),
			want: []string{"spec.windows[0].state: must be opened or closed, got ''"},
		},
		{
			name: "zero window duration",
			spec: specOf("", nil, nil, v1alpha1.Window{Schedule: "0 18 * * FRI", State: v1alpha1.GateClosed}),
			want: []string{"spec.windows[0].duration: must be longer than 0s, got '0s'"},
		},
		{
			name: "negative window duration",
			spec: specOf("", nil, nil, v1alpha1.Window{Schedule: "0 18 * * FRI", Duration: metav1.Duration{Duration: -time.Hour}, State: v1alpha1.GateOpened}),
			want: []string{"spec.windows[0].duration: must be longer than 0s, got '-1h0m0s'"},
		},
		{
			name: "too many expressions",
			spec: specOf("", make([]string, 65), nil),
			want: []string{"spec.cronjob.closed: 65 expressions, at most 64 allowed"},
		},
		{
			name: "several problems at once",
			spec: v1alpha1.GateKeeperSpec{
				Gate: "g", Type: "x", TimeZone: "Mars/Olympus",
				CronJob: &v1alpha1.CronJob{Closed: []string{"* * 40 11 *"}},
				Windows: []v1alpha1.Window{{Schedule: "nope", State: "ajar"}},
			},
			want: []string{
				"spec.type: unsupported type 'x'",
				"spec.timeZone: unknown time zone 'Mars/Olympus'",
				"spec.cronjob.closed[0]: invalid cron expression '* * 40 11 *'",
				"spec.windows[0].schedule: invalid cron expression 'nope'",
				"spec.windows[0].duration: must be longer than 0s",
				"spec.windows[0].state: must be opened or closed, got 'ajar'",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			k, err := Parse(tt.spec)
			g.Expect(err).To(HaveOccurred())
			g.Expect(k).To(BeNil())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			// One line per problem.
			g.Expect(strings.Split(err.Error(), "\n")).To(HaveLen(len(tt.want)))
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for _, spec := range []v1alpha1.GateKeeperSpec{
		specOf("Europe/London", []string{"* * 20-30 11 *", "* * 15-31 12 *"}, []string{}, window("0 18 * * FRI", "63h", v1alpha1.GateClosed)),
		specOf("America/New_York", []string{"@daily", "@hourly", "@monthly", "@yearly", "@weekly", "0 9 * * mon-fri", "0 0 1 jan,jul ?"}, nil),
		specOf("UTC", nil, []string{"  */15 9-17 * * 1-5  "}, window("30 8 * * *", "1.5h", v1alpha1.GateOpened)),
		{Gate: "g"}, // no type, no zone, nothing scheduled
	} {
		g := NewWithT(t)
		_, err := Parse(spec)
		g.Expect(err).NotTo(HaveOccurred(), "%+v", spec)
	}
}

func TestParseOddExpressions(t *testing.T) {
	g := NewWithT(t)
	for _, text := range []string{"TZ=", "TZ=UTC", " CRON_TZ=UTC 0 9 * * *", "@", "@every", "@every x", "@reboot",
		"* * * * * *", "0-", "-", "/", "*/0", "1-2-3 * * * *", "a b c d e", "60 * * * *", "* * * 13 *", "* * * * 7"} {
		_, err := Parse(specOf("", []string{text}, nil))
		g.Expect(err).To(HaveOccurred(), text)
		g.Expect(err.Error()).To(HavePrefix("spec.cronjob.closed[0]: "), text)
		g.Expect(err.Error()).To(ContainSubstring("'"+text+"'"), text)
	}
}
