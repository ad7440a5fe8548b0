package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// waitingSection is the Waiting section of `kubectl gate status NAME`, one line per row, each
// split into its cells at the runs of spaces between columns (a cell has single spaces only).
func waitingSection(g Gomega, out string) [][]string {
	start := strings.Index(out, "\nWaiting:")
	end := strings.Index(out, "\nHistory:")
	g.Expect(start).To(BeNumerically(">=", 0), "no Waiting section in %q", out)
	g.Expect(end).To(BeNumerically(">", start), "no History after Waiting in %q", out)
	var rows [][]string
	for _, line := range strings.Split(out[start+1:end], "\n") {
		rows = append(rows, regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1))
	}
	return rows
}

// The objects of every namespace that wait on the gate, Flux's annotated ones included, in the
// state their annotations say; the ImageUpdateAutomation whose annotation does not parse is left
// out and does not fail the command.
func TestStatusOfOneGateListsTheObjectsWaitingOnIt(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	other := fluxWaitingFixture(t, ns)
	createYAML(t, ns, gitRepository("demo", "change-freeze"))

	res := kubectlGate(t, "status", "change-freeze", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	section := waitingSection(g, res.stdout)
	g.Expect(section[0]).To(Equal([]string{"Waiting:"}))
	g.Expect(section[1]).To(Equal([]string{"KIND", "NAMESPACE/NAME", "STATE", "HELD-SINCE", "WAITING-REVISION"}))
	g.Expect(section[2:]).To(ConsistOf(
		[]string{"GitRepository", ns + "/demo", "-", "-", "-"},
		[]string{"HelmRelease", ns + "/podinfo", "closed (change-freeze)", "2026-12-19T09:30:00Z", "-"},
		[]string{"Kustomization", ns + "/apps", "closed (change-freeze, bypass-signoff)", "2026-12-19T09:00:00Z", waitingRevision},
		[]string{"Kustomization", ns + "/infra", "open", "-", "-"},
		[]string{"HelmRelease", other + "/frontend", "closed (" + ns + "/change-freeze)", "2026-12-19T09:00:00Z", "-"},
	))
	// Columns are aligned.
	var header, podinfo string
	for _, line := range strings.Split(res.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "  KIND"):
			header = line
		case strings.Contains(line, "/podinfo"):
			podinfo = line
		}
	}
	g.Expect(strings.Index(header, "STATE")).To(Equal(strings.Index(podinfo, "closed")))
	g.Expect(strings.Index(header, "HELD-SINCE")).To(Equal(strings.Index(podinfo, "2026-")))
	g.Expect(res.stdout).NotTo(ContainSubstring("images"))

	// A gate that nothing waits on.
	createGate(t, ns, "quiet", gatingv1alpha1.GateSpec{})
	res = kubectlGate(t, "status", "quiet", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring("\nNext transition at:   -\nWaiting:              -\nHistory:              -\n"))
}

// A user who may list the gated kinds in the gate's namespace only sees the objects of that
// namespace, and the section says so; the kinds the user may not list at all are named.
func TestStatusOfOneGateFallsBackToTheGatesNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	fluxWaitingFixture(t, ns)

	ctx := context.Background()
	viewer := "viewer-" + ns
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-viewer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"list"}},
		},
	}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gate-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: viewer}},
	}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())

	forbidden := "not listed: forbidden: your RBAC does not let you list them"
	// RBAC takes effect as the API server's authorizer cache catches up.
	g.Eventually(func(g Gomega) {
		res := kubectlGate(t, "status", "change-freeze", "-n", ns, "--as", viewer)
		g.Expect(res.exitCode).To(Equal(0))
		g.Expect(waitingSection(g, res.stdout)).To(Equal([][]string{
			{"Waiting:"},
			{"KIND", "NAMESPACE/NAME", "STATE", "HELD-SINCE", "WAITING-REVISION"},
			{"Kustomization", ns + "/apps", "closed (change-freeze, bypass-signoff)", "2026-12-19T09:00:00Z", waitingRevision},
			{"Kustomization", ns + "/infra", "open", "-", "-"},
			{"Kustomization: listed in namespace " + ns + " only, as you may not list them in all namespaces"},
			{"GitRepository, HelmRepository, HelmChart, OCIRepository, Bucket, ResourceSet, ResourceSetInputProvider, ManifestGeneration, " +
				"ManifestUpdate, HelmRelease, ImageUpdateAutomation: " + forbidden},
		}))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// Whoever may edit a Kustomization may write its held annotations: the status prints them as
// text, never as commands to the terminal.
func TestStatusEscapesTheHeldAnnotations(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "release", gatingv1alpha1.GateSpec{})
	createYAML(t, ns, fluxObject("kustomize.toolkit.fluxcd.io/v1/Kustomization", "apps", map[string]string{
		gatesapi.GatesAnnotation:           "release",
		gatesapi.HeldSinceAnnotation:       "2026-12-19T09:00:00Z",
		gatesapi.HeldByAnnotation:          "release\x1b[2J",
		gatesapi.WaitingRevisionAnnotation: "main\r\u202eevil",
	}))

	res := kubectlGate(t, "status", "release", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	noTerminalControls(g, res.stdout)
	g.Expect(res.stdout).To(MatchRegexp(
		`  Kustomization\s+` + ns + `/apps\s+closed \(release\\x1b\[2J\)\s+2026-12-19T09:00:00Z\s+main \\u202eevil\n`))
}
