package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func TestWaitReturnsWhenTheGateOpens(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed})
	setStatus(t, gate, gatingv1alpha1.GateStatus{Conditions: []metav1.Condition{openedCondition(false, "Gate closed by default")}})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := pluginCmd(ctx, "wait", "bypass-signoff", "--for", "opened", "--timeout", "20s", "-n", ns)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	g.Expect(cmd.Start()).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// Still waiting on the closed gate, then released by the controller opening it.
	g.Consistently(done, 2*time.Second).ShouldNot(Receive())
	setStatus(t, gate, gatingv1alpha1.GateStatus{Conditions: []metav1.Condition{openedCondition(true, "Gate opened on request")}})
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()), func() string { return stderr.String() })
	g.Expect(stdout.String()).To(Equal("gate " + ns + "/bypass-signoff is opened\n"))
}

func TestWaitReturnsAtOnceWhenTheStateIsReached(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})
	setStatus(t, gate, gatingv1alpha1.GateStatus{Conditions: []metav1.Condition{openedCondition(false, "Gate closed on request")}})

	start := time.Now()
	res := kubectlGate(t, "wait", "freeze", "--for", "closed", "--timeout", "20s", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal("gate " + ns + "/freeze is closed\n"))
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
}

func TestWaitTimesOutOnAClosedGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})
	setStatus(t, gate, gatingv1alpha1.GateStatus{Conditions: []metav1.Condition{openedCondition(false, "Gate closed on request")}})

	res := kubectlGate(t, "wait", "freeze", "--for", "opened", "--timeout", "1s", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(Equal("error: timed out waiting for gate " + ns + "/freeze to be opened\n"))
}

// A gate the controller has not handled yet is neither opened nor closed.
func TestWaitTimesOutOnAGateWithoutConditions(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "new", gatingv1alpha1.GateSpec{})

	res := kubectlGate(t, "wait", "new", "--for", "closed", "--timeout", "1s", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring("timed out waiting for gate " + ns + "/new to be closed"))
}

func TestWaitErrors(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)

	res := kubectlGate(t, "wait", "nope", "--for", "opened", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring(`gate "nope" not found in namespace "` + ns + `"`))

	res = kubectlGate(t, "wait", "nope", "--for", "open", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring(`invalid --for "open": must be opened or closed`))

	res = kubectlGate(t, "wait", "nope", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring(`required flag(s) "for" not set`))
}
