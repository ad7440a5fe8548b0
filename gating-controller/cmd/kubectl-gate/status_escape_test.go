package main

import (
	"strings"
	"testing"
	"unicode"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// noTerminalControls fails on any control rune but the newlines of the layout, and on
// bidirectional overrides: what reaches the terminal is text, never a command to it.
func noTerminalControls(g Gomega, out string) {
	for _, r := range out {
		g.Expect(r == '\n' || !unicode.IsControl(r)).To(BeTrue(), "control rune %U in %q", r, out)
		g.Expect(r).NotTo(BeElementOf('\u202e', '\u2066'), "bidirectional override in %q", out)
	}
}

// Anyone allowed to annotate a gate writes its reason and requestedBy, which the controller copies
// into the status and history: `kubectl gate status` shows them escaped, so an escape sequence
// (clear the screen, set the window title, a carriage return that overwrites the line, a C1
// control, a bidirectional override) is printed as text instead of being run by the terminal.
func TestStatusEscapesWhatUsersWrote(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const (
		reason = "\x1b[2Jdeploy\rall clear\u009b31m \u202eevil\x07"
		by     = "mallory\x1b]0;owned\x07"
	)
	gate := createGate(t, ns, "release", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed})
	setStatus(t, gate, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(true, "Gate open requested \x1b[8m"),
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: metav1.Now(),
				Message: "Gate opened by the open request of " + by + " until the next request"},
		},
		RequestedAt: at("2030-01-02T13:00:00Z"),
		Request:     &gatingv1alpha1.GateRequest{State: gatingv1alpha1.GateOpened, Reason: reason, RequestedBy: by},
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2030-01-02T13:00:05Z"), Opened: true, Cause: "request", Reason: reason, RequestedBy: by},
		},
	})

	res := kubectlGate(t, "status", "release", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	noTerminalControls(g, res.stdout)
	g.Expect(res.stdout).To(ContainSubstring(
		`Request:              open requested by mallory\x1b]0;owned\a: "\x1b[2Jdeploy all clear\u009b31m \u202eevil\a"`))
	g.Expect(res.stdout).To(ContainSubstring(`Message:              Gate open requested \x1b[8m`))
	g.Expect(res.stdout).To(ContainSubstring(`Cause:                Gate opened by the open request of mallory\x1b]0;owned\a until the next request`))
	g.Expect(res.stdout).To(MatchRegexp(
		`  2030-01-02T13:00:05Z\s+opened\s+request\s+mallory\\x1b\]0;owned\\a\s+\\x1b\[2Jdeploy all clear\\u009b31m \\u202eevil\\a\n`))

	res = kubectlGate(t, "status", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	noTerminalControls(g, res.stdout)
	g.Expect(rows(res.stdout, 6)[1]).To(Equal([]string{"release", "True", "-", "request",
		`mallory\x1b]0;owned\a`, `\x1b[2Jdeploy all clear\u009b31m \u202eevil\a`}))

	// An error that quotes what the user typed is escaped too.
	res = kubectlGate(t, "status", "no\x1b[2Jsuch", "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	noTerminalControls(g, res.stderr)
	g.Expect(res.stderr).To(ContainSubstring(`no\x1b[2Jsuch`))
}

// printable writes what is not printable the way strconv.Quote does, and leaves the rest as it is.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"Patching a CVE":     "Patching a CVE",
		"Grüße, 日本 🚀":        "Grüße, 日本 🚀",
		"\x1b[2J":            `\x1b[2J`,
		"a\rb\tc\nd":         `a\rb\tc\nd`,
		"\u009b\u202e\u2066": `\u009b\u202e\u2066`,
		"bad \xff byte":      `bad \xff byte`,
	} {
		NewWithT(t).Expect(printable(in)).To(Equal(want), "%q", in)
	}
	NewWithT(t).Expect(oneLine("  two\n lines\x1b ")).To(Equal(`two lines\x1b`))
	NewWithT(t).Expect(strings.Count(printableLines("a\x1b\nb"), "\n")).To(Equal(1))
}
