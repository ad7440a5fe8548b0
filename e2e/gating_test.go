package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// A user opens and closes a gate with the kubectl plugin against the running gating-controller:
// the gate opens for its window, consumers see it, metrics and logs record it.
func TestGateOpenedAndClosedWithThePlugin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	kubeconfig := kubeconfigIn(t, dir)
	c := startController(t, "gating-controller", kubeconfig, dir)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gating-e2e"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	gate := gates.NewGate()
	gate.SetNamespace(ns.Name)
	gate.SetName("bypass-signoff")
	g.Expect(unstructured.SetNestedField(gate.Object, true, "spec", "closed")).To(Succeed())
	g.Expect(unstructured.SetNestedField(gate.Object, "2h", "spec", "window")).To(Succeed())
	g.Expect(env.Client.Create(ctx, gate)).To(Succeed())

	plugin := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "kubectl-gate"), append(args, "-n", ns.Name)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := plugin("wait", "bypass-signoff", "--for", "closed", "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	consumer := &gatesapi.Gates{Refs: []string{"bypass-signoff"}}
	res, err := gates.Evaluate(ctx, env.Client, ns.Name, consumer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Message()).To(Equal("Reconciliation is blocked as gate 'gating-e2e/bypass-signoff' is closed."))

	out, err = plugin("open", "bypass-signoff", "Patching a CVE: Signed off by Bob the builder")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = plugin("wait", "bypass-signoff", "--for", "opened", "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	res, err = gates.Evaluate(ctx, env.Client, ns.Name, consumer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Open).To(BeTrue())

	out, err = plugin("status", "bypass-signoff")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("Gate scheduled for closing at"))
	g.Expect(out).To(ContainSubstring("sluice-admin"))
	g.Expect(out).To(ContainSubstring("Patching a CVE: Signed off by Bob the builder"))

	metrics := get(t, "http://"+c.MetricsAddr+"/metrics")
	g.Expect(metrics).To(ContainSubstring(`gate_open{name="bypass-signoff",namespace="gating-e2e"} 1`))
	g.Expect(metrics).To(ContainSubstring(`gate_transitions_total{name="bypass-signoff",namespace="gating-e2e",state="opened"} 1`))
	g.Expect(metrics).To(ContainSubstring(`gotk_reconcile_condition{kind="Gate",name="bypass-signoff",namespace="gating-e2e",status="True",type="Ready"} 1`))
	logs, err := os.ReadFile(c.LogPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logs)).To(ContainSubstring(`"msg":"opening gate: 'Patching a CVE: Signed off by Bob the builder'"`))

	out, err = plugin("close", "bypass-signoff")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = plugin("wait", "bypass-signoff", "--for", "closed", "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() string { return get(t, "http://"+c.MetricsAddr+"/metrics") }, 10*time.Second).
		Should(ContainSubstring(`gate_open{name="bypass-signoff",namespace="gating-e2e"} 0`))
	g.Expect(strings.Count(string(logs), "opening gate")).To(Equal(1))
}
