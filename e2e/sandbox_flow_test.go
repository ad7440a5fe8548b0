package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/browsertest"
)

// flowPageOfTheDemo is the flow page (`kubectl gate ui`, flow.html) of the demo `make dev` runs:
// the GitRepository with both gates on its edge from the Git server, both ManifestGenerations,
// the HelmChart and the ResourceSet. A commit pushed while both gates are closed shows as
// waiting, with the gate's cause, once the page's Reconcile button has fetched it; after
// `kubectl gate open` it shows as the artifact, within 2 s of the GitRepository's status.
func flowPageOfTheDemo(t *testing.T, kubeconfig, gitURL string) {
	g := NewWithT(t)
	const ns = "sluice-demo"
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
		return strings.TrimSpace(string(out))
	}
	gate := func(args ...string) string {
		return run(filepath.Join(binDir, "kubectl-gate"), append(args, "-n", ns)...)
	}
	kubectl := func(args ...string) string { return run(filepath.Join(binDir, "kubectl"), append(args, "-n", ns)...) }

	ctx := browsertest.New(t, 1600, 1000)
	url := startGateUI(t, kubeconfig, "-n", ns)
	g.Expect(chromedp.Do(ctx, chromedp.Navigate(url+"flow.html"))).To(Succeed())
	eval := func(script string) (string, error) { return chromedp.Run(ctx, chromedp.Evaluate[string](script)) }
	node := func(id string) func() (string, error) {
		return func() (string, error) {
			return eval(fmt.Sprintf(`(document.querySelector('#graph [data-id="%s"]') || {textContent: ""}).textContent`, id))
		}
	}
	repo := "GitRepository/" + ns + "/demo"
	for _, id := range []string{repo, "ManifestGeneration/" + ns + "/staging", "ManifestGeneration/" + ns + "/production",
		"HelmChart/" + ns + "/podinfo", "ResourceSet/" + ns + "/tenants"} {
		g.Eventually(node(id)).WithTimeout(30*time.Second).Should(ContainSubstring(id[strings.LastIndex(id, "/")+1:]), id)
	}
	g.Eventually(func() (string, error) {
		return eval(`[...document.querySelectorAll("#graph [data-gate]")].map((p) => p.dataset.gate + " -> " + p.dataset.via).sort().join("\n")`)
	}).Should(Equal(ns + "/bypass-signoff -> " + repo + "\n" + ns + "/change-freeze -> " + repo))
	browsertest.Screenshot(t, ctx, "flow-demo.png")

	// Both gates closed, whatever the day; a commit pushed.
	gate("close", "change-freeze", "Testing a hold")
	gate("close", "bypass-signoff")
	gate("wait", "change-freeze", "--for", "closed", "--timeout", "60s")
	gate("wait", "bypass-signoff", "--for", "closed", "--timeout", "60s")
	clone := filepath.Join(t.TempDir(), "demo")
	run("git", "clone", "-q", gitURL, clone)
	g.Expect(os.WriteFile(filepath.Join(clone, "flow-page.txt"), []byte("held by the gates\n"), 0o644)).To(Succeed())
	run("git", "-C", clone, "add", "flow-page.txt")
	run("git", "-C", clone, "-c", "user.name=Flow Test", "-c", "user.email=flow@example.com", "commit", "-q", "-m", "A commit the gates hold")
	run("git", "-C", clone, "push", "-q", "origin", "HEAD")
	commit := run("git", "-C", clone, "rev-parse", "HEAD")

	// The page's Reconcile button fetches it; the page says it waits, and why.
	_, err := eval(fmt.Sprintf(`(() => {
		document.querySelector('#graph [data-id="%s"]').dispatchEvent(new MouseEvent("click", {bubbles: true}));
		return "";
	})()`, repo))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() (string, error) {
		return eval(`(() => { const b = document.querySelector('#details [data-action="reconcile"]'); if (b) b.click(); return b ? "clicked" : ""; })()`)
	}).WithTimeout(10 * time.Second).Should(Equal("clicked"))
	details := func() (string, error) { return eval(`document.getElementById("details").innerText`) }
	g.Eventually(details).WithTimeout(2*time.Minute).Should(And(
		ContainSubstring(commit),
		MatchRegexp(`waiting to apply \S*`+commit+`: gate `+ns+`/change-freeze is closed \(Gate closed by [^)]*\)`),
	), "the commit held by the gates, and why")
	browsertest.Screenshot(t, ctx, "flow-held.png")

	// Released: the page follows the GitRepository's status within 2 s.
	opened := time.Now()
	gate("open", "bypass-signoff", "Ship the held commit")
	artifact := func() string {
		return kubectl("get", "gitrepository", "demo", "-o", "jsonpath={.status.artifact.revision}")
	}
	g.Eventually(artifact).WithTimeout(2 * time.Minute).WithPolling(50 * time.Millisecond).Should(ContainSubstring(commit))
	stored := time.Now()
	g.Eventually(node(repo)).WithTimeout(2*time.Second).WithPolling(50*time.Millisecond).Should(And(
		ContainSubstring("ready"), ContainSubstring("@sha1:"+commit[:7]), Not(ContainSubstring("waiting"))),
		"the page shows the artifact within 2 s of the GitRepository's status")
	t.Logf("after `kubectl gate open`: the artifact stored in %v, on the page %v later",
		stored.Sub(opened).Round(time.Millisecond), time.Since(stored).Round(time.Millisecond))
	browsertest.Screenshot(t, ctx, "flow-released.png")
}
