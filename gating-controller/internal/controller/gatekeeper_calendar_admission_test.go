package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The API server refuses a calendar that names no document, or two, a path without its source
// (or the reverse), a path out of the artifact, and a source of another API, as a user writes them.
func TestGateKeeperCalendarAdmission(t *testing.T) {
	ns := env.Namespace(t)
	keeperWith := func(calendar string) string {
		return "apiVersion: gating.toolkit.fluxcd.io/v1alpha1\nkind: GateKeeper\nmetadata:\n  generateName: freeze-\n" +
			"spec:\n  gate: production\n  calendar:\n" + calendar
	}
	for name, tc := range map[string]struct {
		calendar string
		rejected string // the message; empty when admitted
	}{
		"a ConfigMap": {calendar: "    configMapRef: {name: holidays, key: freeze.ics}\n"},
		"a GitRepository and a path": {calendar: "    sourceRef: {kind: GitRepository, name: calendars}\n" +
			"    path: ./freeze/calendar.ics\n"},
		"a source with its apiVersion": {calendar: "    sourceRef: {apiVersion: source.toolkit.fluxcd.io/v1beta2, kind: OCIRepository, name: calendars}\n" +
			"    path: calendar.ics\n"},
		"a Bucket":            {calendar: "    sourceRef: {kind: Bucket, name: calendars}\n    path: calendar.ics\n"},
		"an ExternalArtifact": {calendar: "    sourceRef: {kind: ExternalArtifact, name: calendars}\n    path: calendar.ics\n"},
		"both": {
			calendar: "    configMapRef: {name: holidays, key: freeze.ics}\n    sourceRef: {kind: GitRepository, name: calendars}\n" +
				"    path: calendar.ics\n",
			rejected: "spec.calendar must set exactly one of configMapRef and sourceRef",
		},
		"neither": {calendar: "    state: closed\n", rejected: "spec.calendar must set exactly one of configMapRef and sourceRef"},
		"a source without a path": {
			calendar: "    sourceRef: {kind: GitRepository, name: calendars}\n",
			rejected: "spec.calendar.path is required with sourceRef, and only with it",
		},
		"a path without a source": {
			calendar: "    configMapRef: {name: holidays, key: freeze.ics}\n    path: calendar.ics\n",
			rejected: "spec.calendar.path is required with sourceRef, and only with it",
		},
		"an absolute path": {
			calendar: "    sourceRef: {kind: GitRepository, name: calendars}\n    path: /etc/calendar.ics\n",
			rejected: "spec.calendar.path must be relative to the root of the artifact, without .. elements",
		},
		"a path that climbs out": {
			calendar: "    sourceRef: {kind: GitRepository, name: calendars}\n    path: freeze/../../calendar.ics\n",
			rejected: "spec.calendar.path must be relative to the root of the artifact, without .. elements",
		},
		"an empty path": {
			calendar: "    sourceRef: {kind: GitRepository, name: calendars}\n    path: \"\"\n",
			rejected: "spec.calendar.path: Invalid value: \"\": spec.calendar.path in body should be at least 1 chars long",
		},
		"a kind that is no source of a calendar": {
			calendar: "    sourceRef: {kind: HelmChart, name: calendars}\n    path: calendar.ics\n",
			rejected: `spec.calendar.sourceRef.kind: Unsupported value: "HelmChart"`,
		},
		"a source of another API": {
			calendar: "    sourceRef: {apiVersion: v1, kind: GitRepository, name: calendars}\n    path: calendar.ics\n",
			rejected: "spec.calendar.sourceRef.apiVersion must be of the group source.toolkit.fluxcd.io",
		},
		"a source without a name": {
			calendar: "    sourceRef: {kind: GitRepository, name: \"\"}\n    path: calendar.ics\n",
			rejected: "spec.calendar.sourceRef.name in body should be at least 1 chars long",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := k8s.Create(context.Background(), testenv.FromYAML(t, ns, keeperWith(tc.calendar)))
			if tc.rejected == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			testenv.ExpectRejected(g, err, tc.rejected)
		})
	}
}
