package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// calendarSource is a freeze calendar kept in Git, as gating-controller/docs/gatekeeper.md
// writes it: a GitRepository and a GateKeeper reading freeze/calendar.ics of its artifact.
const calendarSource = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: production
spec:
  default: opened
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: change-calendar
spec:
  interval: 2s
  url: __URL__
  ref:
    branch: master
  secretRef:
    name: git-credentials
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: freeze
spec:
  gate: production
  calendar:
    sourceRef:
      kind: GitRepository
      name: change-calendar
    path: freeze/calendar.ics
`

// icsEvent is a VEVENT from start to end (UTC).
func icsEvent(uid, summary string, start, end time.Time) string {
	const f = "20060102T150405Z"
	return fmt.Sprintf("BEGIN:VEVENT\r\nUID:%s\r\nSUMMARY:%s\r\nDTSTART:%s\r\nDTEND:%s\r\nEND:VEVENT\r\n",
		uid, summary, start.UTC().Format(f), end.UTC().Format(f))
}

// icsCalendar is a calendar document of the events.
func icsCalendar(events ...string) string {
	return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example Corp//Change calendar//EN\r\n" +
		strings.Join(events, "") + "END:VCALENDAR\r\n"
}

// A change freeze kept in a Git repository: the GateKeeper reads the calendar from the
// GitRepository's artifact and holds the gate closed during its event, naming it; a commit that
// removes the event opens the gate within seconds of the new artifact (the watch on the source,
// not the keeper's five-minute retry); a commit whose calendar does not parse holds the gate
// closed and says which file; an artifact that cannot be downloaded leaves the last good calendar
// in force and says so.
func TestScenarioCalendarFromSource(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "calendar-source")
	g := s.g
	s.gitSecret(s.ns, "git-credentials")
	now := time.Now().UTC()
	freezeEnd := now.Truncate(time.Hour).Add(3 * time.Hour)
	freeze := icsEvent("release-freeze@example.com", "Release freeze", now.Add(-time.Hour), freezeEnd)
	repo, first := s.newRepo("change-calendar", map[string]string{
		"freeze/calendar.ics": icsCalendar(freeze), "README.md": "The change calendar.\n"})
	s.create(calendarSource, "__URL__", repo.HTTPURL())

	// The freeze of the first commit holds the gate closed, and the keeper names it.
	until := freezeEnd.Format(time.RFC3339)
	settled(g, gitRepositoryGVK, s.ns, "change-calendar", HavePrefix("True|"), artifactRevision("master@sha1:"+first))
	g.Eventually(readyOf(gateKeeperGVK, s.ns, "freeze"), timeout).Should(Equal(
		"True|Succeeded|Gate 'production' is kept closed for 'Release freeze' until " + until))
	g.Eventually(conditionOf(gateGVK, s.ns, "production", "Opened"), timeout).Should(Equal(
		"False|ReconciliationSucceeded|Gate scheduled for opening at " + until))

	// The freeze is called off: the next one is in a week. The gate opens as soon as the
	// artifact of the commit is there.
	nextWeek := now.Truncate(time.Hour).Add(7 * 24 * time.Hour)
	second := repo.Commit(t, "Call off the release freeze", map[string]string{"freeze/calendar.ics": icsCalendar(
		icsEvent("migration@example.com", "Datacenter migration", nextWeek, nextWeek.Add(48*time.Hour)))})
	g.Eventually(revisionOf(gitRepositoryGVK, s.ns, "change-calendar"), timeout, 100*time.Millisecond).Should(Equal("master@sha1:" + second))
	stored := time.Now()
	g.Eventually(conditionOf(gateGVK, s.ns, "production", "Opened"), 10*time.Second, 100*time.Millisecond).Should(Equal(
		"True|ReconciliationSucceeded|Gate scheduled for closing at "+nextWeek.Format(time.RFC3339)),
		"the gate opens on the source's event, not at the keeper's retry")
	t.Logf("the gate was opened %s after the test saw the new artifact", time.Since(stored).Round(10*time.Millisecond))
	g.Eventually(readyOf(gateKeeperGVK, s.ns, "freeze"), timeout).Should(Equal(
		"True|Succeeded|Gate 'production' is kept opened until " + nextWeek.Format(time.RFC3339)))

	// A calendar that does not parse: the gate is held closed, and the keeper and the gate say
	// which revision and file.
	third := repo.Commit(t, "Edit the calendar by hand", map[string]string{"freeze/calendar.ics": icsCalendar(
		"BEGIN:VEVENT\r\nUID:typo@example.com\r\nSUMMARY:Typo\r\nDTSTART:2026-13-45\r\nDTEND:20261231T000000Z\r\nEND:VEVENT\r\n")})
	where := "spec.calendar.sourceRef: GitRepository 'change-calendar' revision 'master@sha1:" + third + "' file 'freeze/calendar.ics': "
	g.Eventually(readyOf(gateKeeperGVK, s.ns, "freeze"), timeout).Should(HavePrefix(
		"False|CalendarFailed|calendar cannot be read, the gate is held closed until it is fixed: " + where))
	g.Eventually(conditionOf(gateGVK, s.ns, "production", "Opened"), timeout).Should(Equal(
		"False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))
	g.Expect(conditionOf(gateGVK, s.ns, "production", "KeeperFailed")(g)).To(HavePrefix(
		"True|InvalidSchedule|GateKeeper 'freeze' cannot be evaluated, the gate is held closed until it is fixed: " + where))

	// Fixed with a new freeze.
	fourth := repo.Commit(t, "Freeze again", map[string]string{"freeze/calendar.ics": icsCalendar(freeze)})
	g.Eventually(readyOf(gateKeeperGVK, s.ns, "freeze"), timeout).Should(Equal(
		"True|Succeeded|Gate 'production' is kept closed for 'Release freeze' until " + until))
	g.Eventually(conditionOf(gateGVK, s.ns, "production", "KeeperFailed"), timeout).Should(BeEmpty())

	// The artifact server serves something else than status.artifact says (a digest mismatch, as
	// a corrupted download would be): the keeper keeps the calendar it read, and says so. The
	// GitRepository is suspended first, so that the source-controller leaves its status alone.
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, gitRepositoryGVK, s.ns, "change-calendar")
		g.Expect(unstructured.SetNestedField(obj.Object, true, "spec", "suspend")).To(Succeed())
		g.Expect(k8s().Update(t.Context(), obj)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(logContains("source-controller", "reconciliation is suspended for this object",
		`"GitRepository":{"name":"change-calendar","namespace":"`+s.ns+`"}`), timeout).Should(BeTrue())
	const newer = "master@sha1:ffffffffffffffffffffffffffffffffffffffff"
	const wrong = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, gitRepositoryGVK, s.ns, "change-calendar")
		g.Expect(unstructured.SetNestedField(obj.Object, newer, "status", "artifact", "revision")).To(Succeed())
		g.Expect(unstructured.SetNestedField(obj.Object, wrong, "status", "artifact", "digest")).To(Succeed())
		g.Expect(k8s().Status().Update(t.Context(), obj)).To(Succeed())
	}, timeout).Should(Succeed())
	kept := "the calendar of GitRepository 'change-calendar' revision 'master@sha1:" + fourth + "' is kept: revision '" + newer +
		"' cannot be downloaded: artifact digest mismatch: "
	g.Eventually(readyOf(gateKeeperGVK, s.ns, "freeze"), timeout).Should(HavePrefix(
		"True|Succeeded|Gate 'production' is kept closed for 'Release freeze' until " + until + "; " + kept))
	g.Eventually(testenv.EventsOf(k8s(), client.ObjectKey{Namespace: s.ns, Name: "freeze"}, "GateKeeper"), timeout).
		Should(ContainElement(HavePrefix("Warning CalendarStale: " + kept)))
	g.Expect(conditionOf(gateGVK, s.ns, "production", "Opened")(g)).To(Equal(
		"False|ReconciliationSucceeded|Gate scheduled for opening at " + until))
	g.Expect(conditionOf(gateGVK, s.ns, "production", "KeeperFailed")(g)).To(BeEmpty())
}
