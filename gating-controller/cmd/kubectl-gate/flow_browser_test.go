package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/browsertest"
)

// evaluate runs a script in the page and returns its value.
func evaluate[T any](ctx context.Context, script string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](script))
}

// graphText is the text of a node of the graph ("" while it is not drawn).
func graphText(ctx context.Context, id string) (string, error) {
	return evaluate[string](ctx, fmt.Sprintf(`(document.querySelector('#graph [data-id="%s"]') || {textContent: ""}).textContent`, id))
}

func detailsText(ctx context.Context) (string, error) {
	return evaluate[string](ctx, `document.getElementById("details").innerText`)
}

func click(ctx context.Context, selector string) error {
	_, err := evaluate[bool](ctx, fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		if (!e) throw new Error("nothing at " + %q);
		e.dispatchEvent(new MouseEvent("click", {bubbles: true}));
		return true;
	})()`, selector, selector))
	return err
}

// hostileRepository is a GitRepository whose controller failed with a message an attacker
// wrote (a Git server's error is quoted into it), behind a gate.
func hostileRepository(t *testing.T, ns string) {
	t.Helper()
	repo := createYAML(t, ns, gitRepository("demo", "bypass-signoff"))
	NewWithT(t).Expect(unstructured.SetNestedSlice(repo.Object, []any{map[string]any{
		"type": "Ready", "status": "False", "reason": "GitOperationFailed", "lastTransitionTime": "2026-12-20T00:00:00Z",
		"message": `failed to checkout: <img src=x id=injected onerror="document.title='injected'"><script>document.title='injected'</script>`,
	}}, "status", "conditions")).To(Succeed())
	NewWithT(t).Expect(env.Client.Status().Update(context.Background(), repo)).To(Succeed())
}

// The flow page in a browser, against the real API server: a GitRepository and the
// ManifestGeneration behind a closed gate, with the gates drawn on their edges; a message and a
// gate cause holding markup are shown as text; a consumer held shows why; the viewer reconciles
// the source with its button, and the change in the cluster redraws the page without a reload.
func TestFlowPageInABrowser(t *testing.T) {
	g := NewWithT(t)
	ctx := browsertest.New(t, 1280, 1024)
	ns := env.Namespace(t)
	demoGates(t, ns)
	hostileRepository(t, ns)
	createYAML(t, ns, `apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: production}
spec:
  sourceRef: {kind: GitRepository, name: demo}
  path: ./production
  serviceAccountName: apps
  interval: 1m
  gates: {refs: [change-freeze]}
`)
	freeze := closedByFreeze()
	freeze.Conditions[1].Message = `Gate closed by <b id="injected-cause">GateKeeper</b> 'change-freeze-gatekeeper'`
	setStatus(t, getGate(t, ns, "change-freeze"), freeze)

	url := startUI(t, "-n", ns)
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url+"flow.html"))).To(Succeed())
	_, err := evaluate[bool](ctx, `window.loadedOnce = true`)
	g.Expect(err).NotTo(HaveOccurred())

	repo, production := "GitRepository/"+ns+"/demo", "ManifestGeneration/"+ns+"/production"
	g.Eventually(func() (string, error) { return graphText(ctx, repo) }).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring("demo"), ContainSubstring(`failed to checkout: <img src=x id=injected`)))
	g.Expect(graphText(ctx, production)).To(ContainSubstring("production"))
	// Each gate on its edge: bypass-signoff on the repository's, from its Git server, and
	// change-freeze on production's.
	pills, err := evaluate[[]string](ctx, `[...document.querySelectorAll("#graph [data-gate]")].map((p) => p.dataset.gate + " -> " + p.dataset.via + ": " + p.textContent)`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pills).To(ContainElements(
		HavePrefix(ns+"/bypass-signoff -> "+repo+": "), HavePrefix(ns+"/change-freeze -> "+production+": ")))

	// Markup in what the cluster says is text.
	injected, err := evaluate[bool](ctx, `document.getElementById("injected") !== null || document.getElementById("injected-cause") !== null || document.title === "injected"`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(injected).To(BeFalse(), "text from the cluster was inserted as HTML")

	// Production's details say why it waits once it is held, in the gate's words.
	g.Expect(click(ctx, fmt.Sprintf(`#graph [data-id="%s"]`, production))).To(Succeed())
	mg := &unstructured.Unstructured{}
	mg.SetAPIVersion("generator.toolkit.fluxcd.io/v1alpha1")
	mg.SetKind("ManifestGeneration")
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "production"}, mg)).To(Succeed())
	g.Expect(unstructured.SetNestedMap(mg.Object, map[string]any{"state": "closed (change-freeze)",
		"heldSince": "2026-12-25T00:00:05Z", "waitingRevision": "main@sha1:2b1f"}, "status", "gates")).To(Succeed())
	g.Expect(env.Client.Status().Update(context.Background(), mg)).To(Succeed())
	g.Eventually(func() (string, error) { return detailsText(ctx) }).WithTimeout(10 * time.Second).Should(ContainSubstring(
		"waiting to apply main@sha1:2b1f: gate " + ns + `/change-freeze is closed (Gate closed by <b id="injected-cause">GateKeeper</b> 'change-freeze-gatekeeper')`))

	// The source's Reconcile button, as the viewer: the request reaches the cluster.
	g.Expect(click(ctx, fmt.Sprintf(`#graph [data-id="%s"]`, repo))).To(Succeed())
	g.Eventually(func() (bool, error) {
		return evaluate[bool](ctx, `document.querySelector('#details [data-action="reconcile"]') !== null`)
	}).WithTimeout(10 * time.Second).Should(BeTrue())
	g.Expect(click(ctx, `#details [data-action="reconcile"]`)).To(Succeed())
	source := &unstructured.Unstructured{}
	source.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	source.SetKind("GitRepository")
	g.Eventually(func() map[string]string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo"}, source)).To(Succeed())
		return source.GetAnnotations()
	}).WithTimeout(10 * time.Second).Should(HaveKey(reconcileRequestAnnotation))
	g.Eventually(func() (string, error) { return detailsText(ctx) }).WithTimeout(10 * time.Second).Should(
		ContainSubstring("GitRepository " + ns + "/demo: reconcile requested"))

	// The table shows the same, as text.
	g.Expect(click(ctx, "#show-table")).To(Succeed())
	g.Eventually(func() (string, error) {
		return evaluate[string](ctx, fmt.Sprintf(`(document.querySelector('#table [data-id="%s"]') || {innerText: ""}).innerText`, production))
	}).WithTimeout(10 * time.Second).Should(And(ContainSubstring("waiting"), ContainSubstring("main@sha1:2b1f")))
	reloaded, err := evaluate[bool](ctx, `window.loadedOnce !== true`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reloaded).To(BeFalse(), "the page was reloaded")
	browsertest.Screenshot(t, ctx, "kubectl-gate-flow-table.png")
	g.Expect(click(ctx, "#show-graph")).To(Succeed())
	browsertest.Screenshot(t, ctx, "kubectl-gate-flow.png")
}

// A viewer who may only read sees the flow and no button; another site's page cannot act as the
// viewer: its script's request with the page's header is stopped by the browser (CORS), and its
// form, which needs no preflight, is refused by the plugin. The source is never reconciled.
func TestFlowPageOffersNothingToOthers(t *testing.T) {
	g := NewWithT(t)
	ctx := browsertest.New(t, 1280, 1024)
	ns := env.Namespace(t)
	demoGates(t, ns)
	createYAML(t, ns, gitRepository("demo", "bypass-signoff"))
	viewer := "flow-reader-" + ns
	bindRole(t, ns, viewer, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}})

	url := startUI(t, "-n", ns, "--as", viewer)
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url+"flow.html"))).To(Succeed())
	repo := "GitRepository/" + ns + "/demo"
	g.Eventually(func() (string, error) { return graphText(ctx, repo) }).WithTimeout(30 * time.Second).Should(ContainSubstring("demo"))
	g.Expect(click(ctx, fmt.Sprintf(`#graph [data-id="%s"]`, repo))).To(Succeed())
	g.Eventually(func() (string, error) { return detailsText(ctx) }).WithTimeout(10 * time.Second).Should(ContainSubstring("bypass-signoff"))
	g.Expect(click(ctx, fmt.Sprintf(`#graph [data-gate="%s/bypass-signoff"]`, ns))).To(Succeed())
	g.Eventually(func() (string, error) { return detailsText(ctx) }).WithTimeout(10 * time.Second).Should(ContainSubstring("Gate " + ns + "/bypass-signoff"))
	buttons, err := evaluate[int](ctx, `document.querySelectorAll("[data-action]").length`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(buttons).To(BeZero(), "a viewer who may only read was offered buttons")

	// Another site, in the same browser: its script, then its form.
	reconcile := url + "api/objects/GitRepository/" + ns + "/demo/reconcile"
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="POST" action="%s" enctype="text/plain">
<input name='{"x":"' value='"}'></form>`, reconcile)
	}))
	t.Cleanup(attacker.Close)
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(attacker.URL))).To(Succeed())
	fetched, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q, {method: "POST",
		headers: {"Content-Type": "application/json", "X-Sluice-Dashboard": "1"}, body: "{}"})
		.then((r) => "answered " + r.status, (e) => "failed: " + e.message)`, reconcile), chromedp.EvalAwaitPromise))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetched).To(HavePrefix("failed: "), "the browser sent another site's request with the page's header")
	_, err = evaluate[bool](ctx, `document.getElementById("f").submit(), true`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() (string, error) { return evaluate[string](ctx, `document.body ? document.body.innerText : ""`) }).
		WithTimeout(10 * time.Second).Should(ContainSubstring("actions come from the dashboard page only"))

	source := &unstructured.Unstructured{}
	source.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	source.SetKind("GitRepository")
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo"}, source)).To(Succeed())
	g.Expect(source.GetAnnotations()).NotTo(HaveKey(reconcileRequestAnnotation))
}
