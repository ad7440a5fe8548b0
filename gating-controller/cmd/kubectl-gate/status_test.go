package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// statusFixture creates three gates: one opened on request, one closed by default, and one the
// controller has not handled yet.
func statusFixture(t *testing.T) string {
	ns := env.Namespace(t)
	bypass := createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed})
	setStatus(t, bypass, gatingv1alpha1.GateStatus{
		Conditions:       []metav1.Condition{openedCondition(true, "Gate scheduled for closing at 2030-01-02T15:00:00Z")},
		RequestedAt:      at("2030-01-02T13:00:00Z"),
		Request:          &gatingv1alpha1.GateRequest{State: gatingv1alpha1.GateOpened, Reason: "Patching a CVE", RequestedBy: "alice"},
		ResetToDefaultAt: at("2030-01-02T15:00:00Z"),
		NextTransitionAt: at("2030-01-02T15:00:00Z"),
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2030-01-02T13:00:05Z"), Opened: true, Cause: "request", Reason: "Patching a CVE", RequestedBy: "alice"},
			{Time: *at("2030-01-01T09:00:00Z"), Opened: false, Cause: "default"},
		},
	})
	freeze := createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})
	setStatus(t, freeze, gatingv1alpha1.GateStatus{
		Conditions:       []metav1.Condition{openedCondition(false, "Gate closed by default")},
		NextTransitionAt: at("2030-01-03T08:00:00Z"),
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2030-01-02T18:00:00Z"), Opened: false, Cause: "gatekeeper/office-hours", Reason: "Outside office hours"},
		},
	})
	createGate(t, ns, "new", gatingv1alpha1.GateSpec{})
	return ns
}

// rows splits a table into its lines' columns, tolerating the reason's spaces by keeping
// everything after the sixth column together.
func rows(table string, columns int) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		out = append(out, strings.SplitN(strings.Join(strings.Fields(line), " "), " ", columns))
	}
	return out
}

func TestStatusListsTheGatesOfTheNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := statusFixture(t)

	res := kubectlGate(t, "status", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(rows(res.stdout, 6)).To(Equal([][]string{
		{"NAME", "OPENED", "NEXT-TRANSITION", "CAUSE", "REQUESTED-BY", "REASON"},
		{"bypass-signoff", "True", "2030-01-02T15:00:00Z", "request", "alice", "Patching a CVE"},
		{"freeze", "False", "2030-01-03T08:00:00Z", "gatekeeper/office-hours", "-", "Outside office hours"},
		{"new", "Unknown", "-", "-", "-", "-"},
	}))
	// Columns are aligned.
	lines := strings.Split(res.stdout, "\n")
	g.Expect(strings.Index(lines[0], "OPENED")).To(Equal(strings.Index(lines[1], "True")))
}

func TestStatusAllNamespacesAddsTheNamespaceColumn(t *testing.T) {
	g := NewWithT(t)
	ns := statusFixture(t)

	res := kubectlGate(t, "status", "-A")
	g.Expect(res.exitCode).To(Equal(0))
	table := rows(res.stdout, 7)
	g.Expect(table[0]).To(Equal([]string{"NAMESPACE", "NAME", "OPENED", "NEXT-TRANSITION", "CAUSE", "REQUESTED-BY", "REASON"}))
	g.Expect(table).To(ContainElements(
		[]string{ns, "bypass-signoff", "True", "2030-01-02T15:00:00Z", "request", "alice", "Patching a CVE"},
		[]string{ns, "new", "Unknown", "-", "-", "-", "-"},
	))
}

func TestStatusOfOneGateIsDetailed(t *testing.T) {
	g := NewWithT(t)
	ns := statusFixture(t)

	res := kubectlGate(t, "status", "bypass-signoff", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal(`Gate:                 ` + ns + `/bypass-signoff
State:                opened (Opened=True)
Message:              Gate scheduled for closing at 2030-01-02T15:00:00Z
Cause:                -
Default:              closed
Requested at:         2030-01-02T13:00:00Z
Request:              open requested by alice: "Patching a CVE"
Reset to default at:  2030-01-02T15:00:00Z
Next transition at:   2030-01-02T15:00:00Z
Waiting:              -
History:
  TIME                   STATE    CAUSE     REQUESTED-BY   REASON
  2030-01-02T13:00:05Z   opened   request   alice          Patching a CVE
  2030-01-01T09:00:00Z   closed   default   -              -
`))
}

func TestStatusOfAGateWithoutConditionsIsUnknown(t *testing.T) {
	g := NewWithT(t)
	ns := statusFixture(t)

	res := kubectlGate(t, "status", "new", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring("State:                unknown (Opened=Unknown)\n"))
	g.Expect(res.stdout).To(ContainSubstring("Request:              -\n"))
	g.Expect(res.stdout).To(ContainSubstring("Next transition at:   -\n"))
	g.Expect(res.stdout).To(HaveSuffix("History:              -\n"))
}

func TestStatusErrors(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)

	res := kubectlGate(t, "status", "nope", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring(`gate "nope" not found in namespace "` + ns + `"`))

	res = kubectlGate(t, "status", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(BeEmpty())
	g.Expect(res.stderr).To(Equal(`No gates found in namespace "` + ns + `".` + "\n"))
}

// A gate with a promotion and checks shows the chain: the revision it is opened for, the one
// promoted, the one soaking and until when, and the failing check.
func TestStatusShowsThePromotionChain(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "production", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed,
		Promotion: &gatingv1alpha1.GatePromotion{From: []gatingv1alpha1.GateObjectReference{
			{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Name: "staging"}}},
		Checks: []gatingv1alpha1.GateCheck{{GateObjectReference: gatingv1alpha1.GateObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"}, Ready: true}}})
	setStatus(t, gate, gatingv1alpha1.GateStatus{
		Conditions:        []metav1.Condition{openedCondition(false, "Gate closed by a failing check")},
		OpenedForRevision: "main@sha1:r1",
		Checks:            "check 'apps/v1/Deployment " + ns + "/podinfo' is not ready: Deployment is not available",
		Promotion: &gatingv1alpha1.GatePromotionStatus{Revision: "main@sha1:r1", PromotedAt: at("2030-01-02T10:00:00Z"),
			Candidate: "main@sha1:r2", SoakingSince: at("2030-01-02T11:00:00Z"), OpensAt: at("2030-01-02T11:30:00Z"),
			Message: "revision 'main@sha1:r2' soaking since 2030-01-02T11:00:00Z in ManifestGeneration " + ns + "/staging"},
	})

	res := kubectlGate(t, "status", "production", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring(`Opened for revision:  main@sha1:r1
Promoted:             main@sha1:r1 at 2030-01-02T10:00:00Z
Candidate:            main@sha1:r2, soaking since 2030-01-02T11:00:00Z, promoted at 2030-01-02T11:30:00Z
Promotion:            revision 'main@sha1:r2' soaking since 2030-01-02T11:00:00Z in ManifestGeneration ` + ns + `/staging
Checks:               failing: check 'apps/v1/Deployment ` + ns + `/podinfo' is not ready: Deployment is not available
`))
}
