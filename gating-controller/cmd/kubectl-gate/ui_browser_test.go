package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/browsertest"
)

// applyExample creates the objects of a manifest of deploy/examples in namespace ns, as
// `kubectl apply -n ns` would; vars replaces the placeholders the sandbox fills in.
func applyExample(t *testing.T, ns, file string, vars ...string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "deploy", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	manifest := strings.NewReplacer(vars...).Replace(string(data))
	for _, doc := range strings.Split(manifest, "\n---\n") {
		createYAML(t, ns, doc)
	}
}

// cardText is what a person reads in a gate's part of the page, "" while it is not there.
func cardText(ctx context.Context, ns, name string) (string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`(document.querySelector('article[data-gate="%s/%s"]') || {innerText: ""}).innerText`, ns, name)))
}

// The demo's gates on the page, in a browser: their state, the Christmas freeze on the timeline,
// the GitRepository waiting behind them, and a `kubectl gate open` showing up without a reload.
func TestUIInABrowser(t *testing.T) {
	g := NewWithT(t)
	ctx := browsertest.New(t, 1280, 1024)
	ns := env.Namespace(t)
	applyExample(t, ns, "gates.yaml")
	applyExample(t, ns, "gitrepository.yaml", "${SANDBOX_GIT_URL}", "http://127.0.0.1:9/demo.git")
	demo := &unstructured.Unstructured{}
	demo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	demo.SetKind("GitRepository")
	demo.SetNamespace(ns)
	demo.SetName("demo")
	held := holdRepository(t, demo)
	heldRow := strings.Join([]string{held.Kind, ns + "/demo", held.State, held.WaitingRevision, held.HeldSince}, "\t")

	// The gates as the gating-controller has them on 20 December 2026.
	setStatus(t, getGate(t, ns, "change-freeze"), gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(true, "Gate scheduled for closing at 2026-12-25T00:00:00Z"),
			readyCondition("Gate opened by the schedule of GateKeeper 'change-freeze-gatekeeper' until 2026-12-25T00:00:00Z"),
		},
		NextTransitionAt: at("2026-12-25T00:00:00Z"),
		History: []gatingv1alpha1.GateTransition{
			// Reasons are data: the page shows them as text, never as markup.
			{Time: *at("2026-12-01T08:00:00Z"), Opened: true, Cause: "gatekeeper/change-freeze-gatekeeper",
				Reason: `<img src=x id=injected onerror="document.title='injected'">`},
		},
	})
	bypass := getGate(t, ns, "bypass-signoff")
	setStatus(t, bypass, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{openedCondition(false, "Gate closed by default"), readyCondition("Gate closed by default")},
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2026-12-19T09:00:00Z"), Opened: false, Cause: "default"},
		},
	})

	url := startUI(t, "-n", ns, "--now", "2026-12-20T00:30:00Z")
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url))).To(Succeed())
	// Set in the page: still there later proves the page changed without a reload.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.loadedOnce = true`))
	g.Expect(err).NotTo(HaveOccurred())

	freeze := func() (string, error) { return cardText(ctx, ns, "change-freeze") }
	g.Eventually(freeze).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring(ns+"/change-freeze\nopened"),
		ContainSubstring("Cause\nGate opened by the schedule of GateKeeper 'change-freeze-gatekeeper' until 2026-12-25T00:00:00Z"),
		ContainSubstring("GateKeeper change-freeze-gatekeeper (UTC)"),
		ContainSubstring("Fri 25 Dec 2026 00:00 UTC\tUTC\t2026-12-25T00:00:00Z\tclosed\tgatekeeper/change-freeze-gatekeeper"),
		ContainSubstring("Sat 26 Dec 2026 00:00 UTC\tUTC\t2026-12-26T00:00:00Z\topened\tgatekeeper/change-freeze-gatekeeper"),
		ContainSubstring(heldRow),
		ContainSubstring(`<img src=x id=injected onerror="document.title='injected'">`),
	))
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("injected") !== null`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(injected).To(BeFalse(), "a reason was inserted as HTML")

	signoff := func() (string, error) { return cardText(ctx, ns, "bypass-signoff") }
	g.Expect(signoff()).To(And(
		ContainSubstring(ns+"/bypass-signoff\nclosed"),
		ContainSubstring("Cause\nGate closed by default"),
		ContainSubstring("No GateKeeper: the gate changes only on request."),
		ContainSubstring(heldRow),
		ContainSubstring("2026-12-19T09:00:00Z\tclosed\tdefault"),
	))

	// The plugin's own open command: the page shows the request at once...
	res := kubectlGate(t, "open", "bypass-signoff", "Patching a CVE", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Eventually(signoff).WithTimeout(30 * time.Second).Should(MatchRegexp(
		`Pending\nopen requested at [0-9TZ:-]+ by sluice-admin: "Patching a CVE", not handled by the gating-controller yet`))

	// ...and the gate opened, once the controller has handled it.
	handled := getGate(t, ns, "bypass-signoff").Annotations["open.gate.fluxcd.io/requestedAt"]
	setStatus(t, bypass, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(true, "Gate scheduled for closing at 2026-12-20T01:30:00Z"),
			readyCondition("Gate opened by the open request of sluice-admin until 2026-12-20T01:30:00Z (for 1h0m0s)"),
		},
		LastHandledOpenAt: handled,
		RequestedAt:       at("2026-12-20T00:30:00Z"),
		Request:           &gatingv1alpha1.GateRequest{State: gatingv1alpha1.GateOpened, Reason: "Patching a CVE", RequestedBy: "sluice-admin"},
		ResetToDefaultAt:  at("2026-12-20T01:30:00Z"),
		NextTransitionAt:  at("2026-12-20T01:30:00Z"),
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2026-12-20T00:30:01Z"), Opened: true, Cause: "request", Reason: "Patching a CVE", RequestedBy: "sluice-admin"},
			{Time: *at("2026-12-19T09:00:00Z"), Opened: false, Cause: "default"},
		},
	})
	g.Eventually(signoff).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring(ns+"/bypass-signoff\nopened"),
		ContainSubstring("Request ends\n2026-12-20T01:30:00Z"),
		ContainSubstring("Sun 20 Dec 2026 01:30 UTC\tUTC\t2026-12-20T01:30:00Z\tclosed\tdefault"),
		ContainSubstring("2026-12-20T00:30:01Z\topened\trequest\tsluice-admin\tPatching a CVE"),
		Not(ContainSubstring("Pending")),
	))
	reloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.loadedOnce !== true`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reloaded).To(BeFalse(), "the page was reloaded")

	browsertest.Screenshot(t, ctx, "kubectl-gate-ui.png")
}
