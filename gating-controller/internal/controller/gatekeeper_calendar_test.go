package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// ics builds a calendar document from VEVENT bodies.
func ics(events ...string) string {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Sluice//test//EN\r\n")
	for _, e := range events {
		b.WriteString("BEGIN:VEVENT\r\n")
		for _, l := range strings.Split(strings.TrimSpace(e), "\n") {
			b.WriteString(strings.TrimSpace(l) + "\r\n")
		}
		b.WriteString("END:VEVENT\r\n")
	}
	b.WriteString("END:VCALENDAR\r\n")
	return b.String()
}

// The holiday calendar of docs/gatekeeper.md: Christmas every year, all day from 24 to 26
// December in the keeper's time zone, but not in 2027; and two release weekends written in
// Europe/Berlin, the first across the end of summer time (Sunday 25 October 2026).
var holidays = ics(`
	UID:xmas@example.com
	SUMMARY:Christmas
	DTSTART;VALUE=DATE:20251224
	DTEND;VALUE=DATE:20251227
	RRULE:FREQ=YEARLY
	EXDATE;VALUE=DATE:20271224`, `
	UID:release-weekend@example.com
	SUMMARY:Release weekend
	DTSTART;TZID=Europe/Berlin:20261023T180000
	DTEND;TZID=Europe/Berlin:20261026T080000
	RRULE:FREQ=WEEKLY;COUNT=2`)

func createConfigMap(t *testing.T, ns, name string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	NewWithT(t).Expect(k8s.Create(context.Background(), cm)).To(Succeed())
	return cm
}

func updateConfigMap(t *testing.T, cm *corev1.ConfigMap, data map[string]string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	cm.Data = data
	g.Expect(k8s.Update(context.Background(), cm)).To(Succeed())
}

// keeperNow returns the keeper's active state and next transition as "active|next", once it
// has handled the last reconcile request.
func keeperNow(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		gk := getKeeper(g, ns, name)
		if gk.Annotations[meta.ReconcileRequestAnnotation] != gk.Status.LastHandledReconcileAt {
			return "status not caught up"
		}
		next := ""
		if gk.Status.NextTransitionAt != nil {
			next = gk.Status.NextTransitionAt.UTC().Format(time.RFC3339)
		}
		return string(gk.Status.Active) + "|" + next
	}
}

// at moves the clock and asks the gate and its keeper to look again.
func at(t *testing.T, ns, now string) {
	t.Helper()
	setClock(now)
	g := NewWithT(t)
	poke(t, getGate(g, ns, "production"))
	poke(t, getKeeper(g, ns, "freeze"))
}

// A calendar keeper closes and opens its gate at the instants of its events in their time
// zones, an hour early (runway), skips the year EXDATE takes out, and picks up a change of its
// ConfigMap without a restart.
func TestCalendarFreeze(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-10-23T12:00:00Z") // Friday 14:00 in Berlin
	cm := createConfigMap(t, ns, "holidays", map[string]string{"freeze.ics": holidays})
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{
		Gate: "production", TimeZone: "Europe/Berlin", Runway: duration("1h"),
		Calendar: &gatingv1.Calendar{ConfigMapRef: &gatingv1.ConfigMapKeyRef{Name: "holidays", Key: "freeze.ics"}},
	})

	// The weekend starts at 18:00 CEST (16:00Z); the runway closes the gate at 15:00Z.
	g.Eventually(keeperReady(ns, "freeze"), timeout).
		Should(Equal("True|Succeeded|Gate 'production' is kept opened until 2026-10-23T15:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-10-23T15:00:00Z"))

	at(t, ns, "2026-10-23T14:59:59Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("opened|2026-10-23T15:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-10-23T15:00:00Z"))

	// Closed an hour before the weekend, until Monday 08:00 CET: 63 hours after the start,
	// across the change to winter time (DTEND's exact duration).
	at(t, ns, "2026-10-23T15:00:00Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("closed|2026-10-26T07:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2026-10-26T07:00:00Z"))
	g.Expect(getGate(g, ns, "production").Status.History[0].Cause).To(Equal("gatekeeper/freeze"))
	g.Expect(blocked(ns, &gatesapi.Gates{Refs: []string{"production"}})(g)).To(Equal(
		"Reconciliation is blocked as gate '" + ns + "/production' is closed until 2026-10-26T07:00:00Z."))

	// The second weekend starts at 18:00 CET, 17:00Z: closed from 16:00Z.
	at(t, ns, "2026-10-26T07:00:00Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("opened|2026-10-30T16:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-10-30T16:00:00Z"))

	// Christmas: 24 December 00:00 CET is 23 December 23:00Z, an hour less for the runway;
	// the gate opens when 27 December begins in Berlin.
	at(t, ns, "2026-12-01T00:00:00Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("opened|2026-12-23T22:00:00Z"))
	at(t, ns, "2026-12-23T21:59:59Z")
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-12-23T22:00:00Z"))
	at(t, ns, "2026-12-23T22:00:00Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("closed|2026-12-26T23:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2026-12-26T23:00:00Z"))
	at(t, ns, "2026-12-26T23:00:00Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("opened|2028-12-23T22:00:00Z")) // not 2027: EXDATE
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2028-12-23T22:00:00Z"))

	// A new calendar in the ConfigMap applies at once: New Year's Day 2027 too.
	updateConfigMap(t, cm, map[string]string{"freeze.ics": holidays[:len(holidays)-len("END:VCALENDAR\r\n")] +
		"BEGIN:VEVENT\r\nUID:ny\r\nSUMMARY:New Year\r\nDTSTART;VALUE=DATE:20270101\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"})
	g.Eventually(keeperReady(ns, "freeze"), timeout).
		Should(Equal("True|Succeeded|Gate 'production' is kept opened until 2026-12-31T22:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-12-31T22:00:00Z"))
}

// A calendar that cannot be read holds the gate closed (fail safe, as a broken cron does) and
// says why on the keeper and the gate; fixing the ConfigMap recovers without a restart.
func TestCalendarFailsSafe(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-02T10:00:00Z")
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{
		Gate: "production", TimeZone: "Europe/Berlin",
		Calendar: &gatingv1.Calendar{ConfigMapRef: &gatingv1.ConfigMapKeyRef{Name: "holidays", Key: "freeze.ics"}},
	})

	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal("False|CalendarFailed|" +
		"calendar cannot be read, the gate is held closed until it is fixed: spec.calendar.configMapRef: ConfigMap 'holidays' not found"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))
	g.Expect(gateCondition(ns, "production", KeeperFailedCondition)(g)).To(Equal("True|InvalidSchedule|" +
		"GateKeeper 'freeze' cannot be evaluated, the gate is held closed until it is fixed: " +
		"spec.calendar.configMapRef: ConfigMap 'holidays' not found"))
	// Events reach the API server after the status: the recorder sends them on its own.
	g.Eventually(eventsOf(ns, "freeze"), timeout).Should(ContainElement(HavePrefix("Warning CalendarFailed: calendar cannot be read")))

	// The ConfigMap appears, without the key.
	cm := createConfigMap(t, ns, "holidays", map[string]string{"other.ics": holidays})
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal("False|CalendarFailed|" +
		"calendar cannot be read, the gate is held closed until it is fixed: " +
		"spec.calendar.configMapRef: ConfigMap 'holidays' key 'freeze.ics': no such key"))

	// Then with a document that does not parse.
	updateConfigMap(t, cm, map[string]string{"freeze.ics": ics("SUMMARY:Christmas\nDTSTART;TZID=Europe/Berlinn:20261224T000000")})
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal("False|CalendarFailed|" +
		"calendar cannot be read, the gate is held closed until it is fixed: " +
		"spec.calendar.configMapRef: ConfigMap 'holidays' key 'freeze.ics': " +
		"VEVENT 'Christmas': DTSTART: unknown time zone 'Europe/Berlinn': use an IANA name such as Europe/Berlin, or define it in a VTIMEZONE"))
	g.Eventually(gateCondition(ns, "production", KeeperFailedCondition), timeout).Should(HaveSuffix(
		"VEVENT 'Christmas': DTSTART: unknown time zone 'Europe/Berlinn': use an IANA name such as Europe/Berlin, or define it in a VTIMEZONE"))
	g.Expect(openedCondition(ns, "production")(g)).
		To(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))

	// Fixed: the calendar decides again.
	updateConfigMap(t, cm, map[string]string{"freeze.ics": holidays})
	g.Eventually(keeperReady(ns, "freeze"), timeout).
		Should(Equal("True|Succeeded|Gate 'production' is kept opened until 2026-12-23T23:00:00Z"))
	g.Eventually(gateCondition(ns, "production", KeeperFailedCondition), timeout).Should(BeEmpty())
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("True|ReconciliationSucceeded|Gate scheduled for closing at 2026-12-23T23:00:00Z"))
}

// Inline periods with a runway: a date range in the keeper's time zone closes the gate the
// runway early.
func TestPeriodsWithRunway(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-03-20T10:00:00Z")
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{
		Gate: "production", TimeZone: "Europe/Berlin", Runway: duration("2h"),
		Periods: []gatingv1.Period{{Name: "Datacenter move", Start: "2026-03-28", End: "2026-03-30"}},
	})
	// 28 March 00:00 CET is 27 March 23:00Z; two hours early. 30 March 00:00 is CEST (22:00Z).
	g.Eventually(keeperReady(ns, "freeze"), timeout).
		Should(Equal("True|Succeeded|Gate 'production' is kept opened until 2026-03-27T21:00:00Z"))
	at(t, ns, "2026-03-27T21:00:00Z")
	g.Eventually(keeperNow(ns, "freeze"), timeout).Should(Equal("closed|2026-03-29T22:00:00Z"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2026-03-29T22:00:00Z"))
}
