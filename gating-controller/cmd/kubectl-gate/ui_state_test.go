package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// newDashboard reads the cluster as the user of cfg, with a fixed now.
func newDashboard(t *testing.T, cfg *rest.Config, namespace, now string) *dashboard {
	t.Helper()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(gatingv1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fixed := at(now).Time
	return &dashboard{client: c, dynamic: dyn, namespace: namespace, now: func() time.Time { return fixed }}
}

// createYAML creates an object as a user writes it, in namespace ns.
func createYAML(t *testing.T, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := testenv.FromYAML(t, ns, manifest)
	NewWithT(t).Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return obj
}

func gitRepository(name string, refs ...string) string {
	m := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: %s
spec:
  interval: 10m
  url: https://git.example.com/demo.git
`, name)
	if len(refs) > 0 {
		m += "  gates:\n    require: oneOf\n    refs:\n"
		for _, r := range refs {
			m += "      - " + r + "\n"
		}
	}
	return m
}

func readyCondition(message string) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: message,
		LastTransitionTime: metav1.Now()}
}

// demoGates makes the gates of deploy/examples/gates.yaml as the gating-controller would have
// them on 20 December 2026: change-freeze opened by its Christmas keeper, and bypass-signoff
// opened by alice's request for an hour.
func demoGates(t *testing.T, ns string) {
	freeze := createGate(t, ns, "change-freeze", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened})
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: change-freeze-gatekeeper
spec:
  gate: change-freeze
  cronjob:
    closed: ['* * 25 12 *']
`)
	setStatus(t, freeze, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(true, "Gate scheduled for closing at 2026-12-25T00:00:00Z"),
			readyCondition("Gate opened by the schedule of GateKeeper 'change-freeze-gatekeeper' until 2026-12-25T00:00:00Z"),
		},
		NextTransitionAt: at("2026-12-25T00:00:00Z"),
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2026-12-01T08:00:00Z"), Opened: true, Cause: "gatekeeper/change-freeze-gatekeeper"},
		},
	})
	window := metav1.Duration{Duration: time.Hour}
	bypass := createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed, Window: &window})
	setStatus(t, bypass, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(true, "Gate scheduled for closing at 2026-12-20T01:00:00Z"),
			readyCondition("Gate opened by the open request of alice until 2026-12-20T01:00:00Z (for 1h0m0s)"),
		},
		RequestedAt:      at("2026-12-20T00:00:00Z"),
		Request:          &gatingv1alpha1.GateRequest{State: gatingv1alpha1.GateOpened, Reason: "Patching\na CVE", RequestedBy: "alice"},
		ResetToDefaultAt: at("2026-12-20T01:00:00Z"),
		NextTransitionAt: at("2026-12-20T01:00:00Z"),
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2026-12-20T00:00:02Z"), Opened: true, Cause: "request", Reason: "Patching\na CVE", RequestedBy: "alice"},
			{Time: *at("2026-12-19T09:00:00Z"), Opened: false, Cause: "default"},
		},
	})
}

func TestUIStateOfTheDemoGates(t *testing.T) {
	g := NewWithT(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	demoGates(t, ns)
	createYAML(t, ns, gitRepository("demo", "change-freeze", "bypass-signoff"))
	createYAML(t, ns, gitRepository("ungated"))
	// Named from another namespace: shown with -A only, as the user may not read that namespace.
	createYAML(t, other, gitRepository("elsewhere", ns+"/change-freeze"))

	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Now).To(Equal("2026-12-20T00:30:00Z"))
	g.Expect(st.Namespace).To(Equal(ns))
	g.Expect(st.TimelineDays).To(Equal(14))
	g.Expect(st.Skipped).To(BeEmpty())
	g.Expect(st.Gates).To(HaveLen(2))

	bypass, freeze := st.Gates[0], st.Gates[1]
	g.Expect(bypass.Name).To(Equal("bypass-signoff"))
	g.Expect(bypass.State).To(Equal("opened"))
	g.Expect(bypass.Cause).To(Equal("Gate opened by the open request of alice until 2026-12-20T01:00:00Z (for 1h0m0s)"))
	g.Expect(bypass.Default).To(Equal("closed"))
	g.Expect(bypass.Request).To(Equal(`open requested by alice: "Patching a CVE"`))
	g.Expect(bypass.RequestEnd).To(Equal("2026-12-20T01:00:00Z"))
	g.Expect(bypass.Keepers).To(BeEmpty())
	g.Expect(bypass.Timeline).To(Equal([]uiTransition{
		{At: "2026-12-20T01:00:00Z", Local: "Sun 20 Dec 2026 01:00 UTC", Zone: "UTC", State: "closed", Cause: "default"},
	}))
	g.Expect(bypass.History).To(Equal([]uiHistory{
		{Time: "2026-12-20T00:00:02Z", State: "opened", Cause: "request", RequestedBy: "alice", Reason: "Patching a CVE"},
		{Time: "2026-12-19T09:00:00Z", State: "closed", Cause: "default", RequestedBy: "-", Reason: "-"},
	}))

	g.Expect(freeze.Name).To(Equal("change-freeze"))
	g.Expect(freeze.State).To(Equal("opened"))
	g.Expect(freeze.RequestEnd).To(Equal("-"))
	g.Expect(freeze.NextTransitionAt).To(Equal("2026-12-25T00:00:00Z"))
	g.Expect(freeze.Keepers).To(Equal([]uiKeeper{{Name: "change-freeze-gatekeeper", TimeZone: "UTC"}}))
	g.Expect(freeze.Timeline).To(Equal([]uiTransition{
		{At: "2026-12-25T00:00:00Z", Local: "Fri 25 Dec 2026 00:00 UTC", Zone: "UTC", State: "closed", Cause: "gatekeeper/change-freeze-gatekeeper"},
		{At: "2026-12-26T00:00:00Z", Local: "Sat 26 Dec 2026 00:00 UTC", Zone: "UTC", State: "opened", Cause: "gatekeeper/change-freeze-gatekeeper"},
	}))

	demo := waitingObject{Kind: "GitRepository", Namespace: ns, Name: "demo", State: "-", HeldSince: "-", WaitingRevision: "-"}
	g.Expect(bypass.Waiting).To(Equal([]waitingObject{demo}))
	g.Expect(freeze.Waiting).To(Equal([]waitingObject{demo}))

	all, err := newDashboard(t, env.Config, "", "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, gate := range all.Gates {
		if gate.Namespace == ns && gate.Name == "change-freeze" {
			for _, w := range gate.Waiting {
				names = append(names, w.Namespace+"/"+w.Name)
			}
		}
	}
	g.Expect(names).To(ConsistOf(ns+"/demo", other+"/elsewhere"))
}

// The timeline shows a keeper's changes in its own zone, and leaves out those that a request in
// force hides.
func TestUITimelineInTheKeepersZone(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: berlin-christmas
spec:
  gate: prod
  timeZone: Europe/Berlin
  cronjob:
    closed: ['* * 24-26 12 *']
`)
	// Closed on request until the 25th: the keeper's closing on the 24th changes nothing, the end
	// of the request neither. A keeper of closed schedules only holds the gate opened after them.
	setStatus(t, gate, gatingv1alpha1.GateStatus{
		RequestedAt:      at("2026-12-20T00:00:00Z"),
		Request:          &gatingv1alpha1.GateRequest{State: gatingv1alpha1.GateClosed, RequestedBy: "bob"},
		ResetToDefaultAt: at("2026-12-25T12:00:00Z"),
	})

	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates).To(HaveLen(1))
	g.Expect(st.Gates[0].Keepers).To(Equal([]uiKeeper{{Name: "berlin-christmas", TimeZone: "Europe/Berlin"}}))
	g.Expect(st.Gates[0].Timeline).To(Equal([]uiTransition{
		{At: "2026-12-26T23:00:00Z", Local: "Sun 27 Dec 2026 00:00 CET", Zone: "Europe/Berlin", State: "opened", Cause: "gatekeeper/berlin-christmas"},
	}))
}

// A broken GateKeeper holds its gate closed whatever the schedules say: no timeline, and a note.
func TestUITimelineOfABrokenKeeper(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: weekend-freeze
spec:
  gate: prod
  cronjob:
    closed: ['* * * * SAT-SUN-X']
`)
	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	gate := st.Gates[0]
	g.Expect(gate.State).To(Equal("unknown"))
	g.Expect(gate.Timeline).To(BeEmpty())
	g.Expect(gate.TimelineNote).To(Equal("GateKeeper 'weekend-freeze' cannot be evaluated: no timeline until it is fixed"))
	g.Expect(gate.Keepers).To(HaveLen(1))
	g.Expect(gate.Keepers[0].Error).To(ContainSubstring("spec.cronjob.closed[0]"))
}

// A request written by `kubectl gate open` shows before the gating-controller handles it.
func TestUIStateShowsAPendingRequest(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed})

	res := kubectlGate(t, "open", "bypass-signoff", "Patching a CVE", "--for", "2h", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates[0].Pending).To(HaveLen(1))
	g.Expect(st.Gates[0].Pending[0]).To(MatchRegexp(
		`^open requested at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ by sluice-admin for 2h: "Patching a CVE", not handled by the gating-controller yet$`))

	// Once handled, it is no longer pending.
	handled := getGate(t, ns, "bypass-signoff").Annotations["open.gate.fluxcd.io/requestedAt"]
	setStatus(t, gate, gatingv1alpha1.GateStatus{LastHandledOpenAt: handled})
	st, err = newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates[0].Pending).To(BeEmpty())
}

// A user who may read the gates of a namespace and its GitRepositories, and nothing else: the
// other kinds are skipped and named, and the gates are still shown.
func TestUIStateSkipsTheKindsTheUserCannotList(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	demoGates(t, ns)
	createYAML(t, ns, gitRepository("demo", "change-freeze"))

	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-viewer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gate-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer-" + ns}},
	}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	user, err := env.Environment.AddUser(envtest.User{Name: "viewer-" + ns}, nil)
	g.Expect(err).NotTo(HaveOccurred())

	// RBAC takes effect as the API server's authorizer cache catches up.
	var st *uiState
	g.Eventually(func(g Gomega) {
		st, err = newDashboard(t, user.Config(), ns, "2026-12-20T00:30:00Z").state(ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithTimeout(10 * time.Second).Should(Succeed())

	forbidden := "forbidden: your RBAC does not let you list them"
	g.Expect(st.Skipped).To(Equal([]skippedKind{
		{Kind: "GateKeeper", Reason: forbidden + ": the timeline leaves their schedules out"},
		{Kind: "HelmRepository", Reason: forbidden},
		{Kind: "HelmChart", Reason: forbidden},
		{Kind: "OCIRepository", Reason: forbidden},
		{Kind: "Bucket", Reason: forbidden},
		{Kind: "ResourceSet", Reason: forbidden},
		{Kind: "ResourceSetInputProvider", Reason: forbidden},
		{Kind: "ManifestGeneration", Reason: forbidden},
		{Kind: "ManifestUpdate", Reason: forbidden},
		{Kind: "Kustomization", Reason: forbidden},
		{Kind: "HelmRelease", Reason: forbidden},
		{Kind: "ImageUpdateAutomation", Reason: forbidden},
	}))
	g.Expect(st.Gates).To(HaveLen(2))
	freeze := st.Gates[1]
	g.Expect(freeze.Waiting).To(HaveLen(1))
	g.Expect(freeze.Keepers).To(BeEmpty())
	g.Expect(freeze.Timeline).To(BeEmpty()) // opened by default, as far as this user can tell

	// Listing the gates themselves is the one thing the page cannot do without.
	_, err = newDashboard(t, user.Config(), "default", "2026-12-20T00:30:00Z").state(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("listing gates")))
}

// A kind whose CRD is not installed is named as such: the error is the API server's own.
func TestUISkipReasonOfAKindThatIsNotInstalled(t *testing.T) {
	g := NewWithT(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	gvr := schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "bucketlists"}
	_, err = dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(skipReason(err)).To(Equal("not installed in the cluster"))
}
