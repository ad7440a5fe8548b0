package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/browsertest"
)

// Replays the stored XSS of Argo CD's CVE-2026-45738 and CVE-2025-47933 (text a tenant writes,
// rendered as markup, and a `javascript:` link): everything the page shows is data someone wrote
// (a gate's reason and history, an open request's reason, a held object's state and waiting
// revision, a calendar event's SUMMARY, a repository URL), and all of it is shown as text in
// Chromium: no element it carries is created, no script runs, no link takes a `javascript:` URL.
// The page's Content-Security-Policy forbids inline script besides: markup inserted by other
// means runs no handler.
//
// Checked against a reintroduced bug: with ui/app.js's el() setting its text through innerHTML
// instead of textContent, the injected elements are created and this test fails; with the CSP
// header removed from ui_handler.go, the inline handler inserted at the end runs and it fails.
func TestUIShowsHostileTextAsText(t *testing.T) {
	g := NewWithT(t)
	ctx := browsertest.New(t, 1280, 1024)
	ns := env.Namespace(t)
	const (
		imgReason   = `<img src=x id=injected-reason onerror="document.title='injected'">`
		scriptCause = `</td><script>document.title='injected'</script>`
		svgSummary  = `<svg id=injected-calendar onload="document.title='injected'"></svg>`
		imgRevision = `main@sha1:<img src=x id=injected-revision onerror="document.title='injected'">`
		openReason  = `<iframe id=injected-request srcdoc="<script>parent.document.title='injected'</script>"></iframe>`
	)
	gate := createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
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
    SUMMARY:`+svgSummary+`
    DTSTART;VALUE=DATE:20261224
    DTEND;VALUE=DATE:20261227
    END:VEVENT
    END:VCALENDAR
`)
	createYAML(t, ns, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: holidays
spec:
  gate: prod
  calendar:
    configMapRef: {name: holidays, key: freeze.ics}
`)
	setStatus(t, gate, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{openedCondition(false, "Gate closed by "+scriptCause), readyCondition("Gate closed by " + scriptCause)},
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2026-12-01T08:00:00Z"), Opened: false, Cause: scriptCause, Reason: imgReason},
		},
	})
	// A repository whose URL a browser would run: the page shows no link to it.
	repo := createYAML(t, ns, strings.Replace(gitRepository("demo", "prod"), "https://git.example.com/demo.git",
		"https://git.example.com/demo.git#javascript:document.title='injected'", 1))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	g.Expect(unstructured.SetNestedMap(repo.Object, map[string]any{
		"state": "closed (" + imgReason + ")", "heldSince": "2026-12-19T09:00:00Z", "waitingRevision": imgRevision,
	}, "status", "gates")).To(Succeed())
	g.Expect(env.Client.Status().Update(context.Background(), repo)).To(Succeed())

	res := kubectlGate(t, "open", "prod", openReason, "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))

	url := startUI(t, "-n", ns, "--now", "2026-12-20T00:30:00Z")
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url))).To(Succeed())
	card := func() (string, error) { return cardText(ctx, ns, "prod") }
	g.Eventually(card).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring(imgReason),
		ContainSubstring(scriptCause),
		ContainSubstring(svgSummary),
		ContainSubstring(imgRevision),
		// The request's reason is quoted (%q): its own quotes are escaped.
		ContainSubstring(`<iframe id=injected-request srcdoc=\"<script>parent.document.title='injected'</script>\"></iframe>`),
	))
	for _, check := range []string{
		`document.querySelector('[id^="injected"]') === null`,
		`document.querySelectorAll('script:not([src])').length === 0`,
		`document.querySelectorAll('iframe, svg#injected-calendar, a[href^="javascript:" i]').length === 0`,
		`document.title !== 'injected'`,
	} {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](check))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue(), check)
	}

	// Markup put in the page by other means runs no inline handler: the CSP forbids it.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
		`document.body.insertAdjacentHTML('beforeend', '<img src=x onerror="window.inlineRan = true">'); true`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(func() (bool, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[bool](`window.inlineRan === true`))
	}).WithTimeout(2 * time.Second).Should(BeFalse())
}
