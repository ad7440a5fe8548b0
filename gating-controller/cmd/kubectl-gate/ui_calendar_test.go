package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// The timeline shows a calendar keeper's events like cron ones, labelled with their SUMMARY,
// read from the keeper's ConfigMap with the user's rights.
func TestUITimelineOfACalendar(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	createYAML(t, ns, `apiVersion: v1
kind: ConfigMap
metadata:
  name: holidays
data:
  freeze.ics: |
    BEGIN:VCALENDAR
    VERSION:2.0
    PRODID:-//Sluice//test//EN
    BEGIN:VEVENT
    UID:xmas@example.com
    SUMMARY:Christmas
    DTSTART;VALUE=DATE:20251224
    DTEND;VALUE=DATE:20251227
    RRULE:FREQ=YEARLY
    END:VEVENT
    END:VCALENDAR
`)
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: holidays
spec:
  gate: prod
  timeZone: Europe/Berlin
  runway: 2h
  calendar:
    configMapRef: {name: holidays, key: freeze.ics}
`)
	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates[0].Keepers).To(Equal([]uiKeeper{{Name: "holidays", TimeZone: "Europe/Berlin"}}))
	g.Expect(st.Gates[0].Timeline).To(Equal([]uiTransition{
		{At: "2026-12-23T21:00:00Z", Local: "Wed 23 Dec 2026 22:00 CET", Zone: "Europe/Berlin", State: "closed",
			Cause: "gatekeeper/holidays", Label: "Christmas"},
		{At: "2026-12-26T23:00:00Z", Local: "Sun 27 Dec 2026 00:00 CET", Zone: "Europe/Berlin", State: "opened",
			Cause: "gatekeeper/holidays", Label: "Christmas"},
	}))

	// A calendar that cannot be read is a keeper that cannot be evaluated.
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: missing
spec:
  gate: prod
  calendar:
    configMapRef: {name: nowhere, key: freeze.ics}
`)
	st, err = newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates[0].Timeline).To(BeEmpty())
	g.Expect(st.Gates[0].TimelineNote).To(Equal("GateKeeper 'missing' cannot be evaluated: no timeline until it is fixed"))
	g.Expect(st.Gates[0].Keepers[1].Error).To(HavePrefix("spec.calendar.configMapRef: ConfigMap 'nowhere': "))
}

// A calendar in a source's artifact is not downloaded by the plugin (the artifact server serves
// the controllers, not users): the keeper is listed without a timeline, and not as broken.
func TestUITimelineOfASourceCalendar(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: holidays
spec:
  gate: prod
  calendar:
    sourceRef: {kind: GitRepository, name: calendars}
    path: freeze/calendar.ics
`)
	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates[0].Timeline).To(BeEmpty())
	g.Expect(st.Gates[0].TimelineNote).To(Equal("GateKeeper 'holidays' reads its calendar from a source's artifact, " +
		"which kubectl gate does not download: no timeline (the GateKeeper's status says what it does now)"))
	g.Expect(st.Gates[0].Keepers[0].Error).To(Equal("spec.calendar.sourceRef: GitRepository 'calendars': " +
		"the calendar is in a source's artifact, which kubectl gate does not download"))
}
