package main

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// A manual close without --for on a gate without spec.window never expires: status says so
// instead of "-", and the cause line names the request.
func TestStatusOfARequestWithoutEnd(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	cause := "Gate closed by the close request of alice until the next request (no duration and no spec.window: it does not end by itself)"
	setStatus(t, gate, gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(false, "Gate close requested"),
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: cause, LastTransitionTime: metav1.Now()},
		},
		RequestedAt: at("2030-01-02T13:00:00Z"),
		Request:     &gatingv1alpha1.GateRequest{State: gatingv1alpha1.GateClosed, RequestedBy: "alice"},
	})

	res := kubectlGate(t, "status", "prod", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring("Cause:                " + cause + "\n"))
	g.Expect(res.stdout).To(ContainSubstring(
		"Reset to default at:  never: the request lasts until the next request (no --for and no spec.window)\n"))
}

// Each request command shows its own example, and says what --for defaults to.
func TestRequestHelp(t *testing.T) {
	for _, verb := range []string{"open", "close"} {
		t.Run(verb, func(t *testing.T) {
			g := NewWithT(t)
			res := kubectlGate(t, verb, "--help")
			g.Expect(res.exitCode).To(Equal(0))
			g.Expect(res.stdout).To(ContainSubstring("Examples:\n  kubectl gate " + verb + " "))
			other := map[string]string{"open": "close", "close": "open"}[verb]
			g.Expect(res.stdout).NotTo(ContainSubstring("kubectl gate " + other + " "))
			g.Expect(res.stdout).To(ContainSubstring("Default: the gate's spec.window, or no end (until the next request) without one."))
		})
	}
}
