package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// sourceCalendar is a calendar read from the file of a source's artifact.
func sourceCalendar(kind, name, path string) *gatingv1.Calendar {
	return &gatingv1.Calendar{SourceRef: &gatingv1.CalendarSourceReference{Kind: kind, Name: name}, Path: path}
}

// A calendar whose source is missing, or has no artifact yet, holds the gate closed (fail safe,
// as for a ConfigMap) and says which source on the keeper and the gate; the watch on the source
// brings the keeper and the gate back as soon as it appears, long before their retry.
func TestCalendarSourceFailsSafe(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-11-02T10:00:00Z")
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{
		Gate: "production", TimeZone: "Europe/Berlin",
		Calendar: sourceCalendar(gatingv1.GitRepositoryKind, "change-calendar", "freeze/calendar.ics"),
	})

	failed := "calendar cannot be read, the gate is held closed until it is fixed: "
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal("False|CalendarFailed|" + failed +
		"spec.calendar.sourceRef: GitRepository 'change-calendar' not found"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))
	g.Expect(gateCondition(ns, "production", KeeperFailedCondition)(g)).To(Equal("True|InvalidSchedule|" +
		"GateKeeper 'freeze' cannot be evaluated, the gate is held closed until it is fixed: " +
		"spec.calendar.sourceRef: GitRepository 'change-calendar' not found"))
	g.Eventually(eventsOf(ns, "freeze"), timeout).Should(ContainElement("Warning CalendarFailed: " + failed +
		"spec.calendar.sourceRef: GitRepository 'change-calendar' not found"))

	// The GitRepository appears; the source-controller has not fetched it yet.
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": ns, "name": "change-calendar"},
		"spec":     map[string]any{"url": "https://git.example.com/change-calendar.git", "interval": "1m"},
	}}
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	noArtifact := "spec.calendar.sourceRef: GitRepository 'change-calendar' has no artifact yet"
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal("False|CalendarFailed|" + failed + noArtifact))
	g.Eventually(gateCondition(ns, "production", KeeperFailedCondition), timeout).Should(Equal("True|InvalidSchedule|" +
		"GateKeeper 'freeze' cannot be evaluated, the gate is held closed until it is fixed: " + noArtifact))
	g.Expect(openedCondition(ns, "production")(g)).
		To(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))

	// An artifact that cannot be downloaded, and no earlier calendar of the source: still closed,
	// the message names the revision and the failure.
	repo.Object["status"] = map[string]any{"artifact": map[string]any{
		"path": "gitrepository/change-calendar.tar.gz", "url": "http://127.0.0.1:1/gitrepository/change-calendar.tar.gz",
		"revision": "main@sha1:0123456789abcdef0123456789abcdef01234567", "lastUpdateTime": "2026-11-02T10:00:00Z",
		"digest": "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
	}}
	g.Expect(k8s.Status().Update(context.Background(), repo)).To(Succeed())
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(And(
		HavePrefix("False|CalendarFailed|"+failed+"spec.calendar.sourceRef: GitRepository 'change-calendar' "+
			"revision 'main@sha1:0123456789abcdef0123456789abcdef01234567': downloading artifact "+
			"'http://127.0.0.1:1/gitrepository/change-calendar.tar.gz': "),
		ContainSubstring("connection refused")))
	g.Expect(openedCondition(ns, "production")(g)).
		To(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))
}

// A source kind whose CRD is not installed (ExternalArtifact, here) is a calendar that cannot be
// read, which says what is missing.
func TestCalendarSourceKindNotServed(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "production", gatingv1.GateSpec{Default: gatingv1.GateOpened})
	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{
		Gate: "production", Calendar: sourceCalendar(gatingv1.ExternalArtifactKind, "calendar", "calendar.ics"),
	})
	g.Eventually(keeperReady(ns, "freeze"), timeout).Should(Equal("False|CalendarFailed|" +
		"calendar cannot be read, the gate is held closed until it is fixed: spec.calendar.sourceRef: " +
		"the API server does not serve the kind ExternalArtifact of source.toolkit.fluxcd.io/v1: is its CRD installed?"))
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate closed as GateKeeper 'freeze' cannot be evaluated"))
}
