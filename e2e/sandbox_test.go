package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// `make dev` runs cmd/sandbox: it must bring the whole system up with the demo of deploy/examples
// Ready, print a kubeconfig kubectl can use and what to try, and stop cleanly on Ctrl-C.
func TestSandboxRunsTheSystemUntilInterrupted(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	build := exec.Command("go", "build", "-o", sandbox, "./cmd/sandbox")
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))

	state := filepath.Join(dir, "state")
	cmd := exec.Command(sandbox, "--bin", binDir, "--state", state)
	cmd.Dir = env.Root
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	cmd.Stderr = os.Stderr
	g.Expect(cmd.Start()).To(Succeed())
	// On a failure, stop it as a user would, so that it stops the control plane and the
	// controllers too; kill it only if it does not exit.
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		exited := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		}
	})

	var printed strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		printed.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "Press Ctrl-C") {
			break
		}
	}
	kubeconfig := filepath.Join(state, "kubeconfig")
	g.Expect(printed.String()).To(ContainSubstring("export KUBECONFIG=" + kubeconfig))
	for _, c := range []string{"source-controller", "gating-controller", "resourceset-controller", "manifest-generator"} {
		g.Expect(printed.String()).To(ContainSubstring(c))
		g.Expect(filepath.Join(state, c+".log")).To(BeAnExistingFile())
	}

	kubectl := func(args ...string) string {
		cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}
	g.Expect(kubectl("get", "crd", "gates.gating.toolkit.fluxcd.io", "-o", "name")).To(
		Equal("customresourcedefinition.apiextensions.k8s.io/gates.gating.toolkit.fluxcd.io\n"))
	// The Gate admission policy of deploy/ is installed.
	g.Expect(kubectl("get", "validatingadmissionpolicy,validatingadmissionpolicybinding", "-o", "name")).To(And(
		ContainSubstring("validatingadmissionpolicy.admissionregistration.k8s.io/gate-requested-by\n"),
		ContainSubstring("validatingadmissionpolicybinding.admissionregistration.k8s.io/gate-requested-by\n")))

	// The demo of deploy/examples is Ready: the repository fetched (over Christmas the demo's
	// change freeze holds it until bypass-signoff is opened), generated and applied, the chart
	// packaged, the tenants created.
	if now := time.Now().UTC(); now.Month() == time.December && now.Day() == 25 {
		// In the user's name, as the admission policy of the sandbox wants it.
		open := exec.Command(filepath.Join(binDir, "kubectl-gate"), "open", "bypass-signoff", "Christmas", "-n", "sluice-demo")
		open.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := open.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
	}
	demo := []string{"gitrepository/demo", "manifestgeneration/staging", "manifestgeneration/production",
		"helmchart/podinfo", "resourceset/tenants", "gate/change-freeze", "gate/bypass-signoff", "gatekeeper/change-freeze-gatekeeper"}
	kubectl(append([]string{"wait", "-n", "sluice-demo", "--for=condition=Ready", "--timeout=2m"}, demo...)...)
	g.Expect(kubectl("get", "-n", "sluice-demo", "deployments", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas} {end}")).To(
		Equal("production-podinfo=3 staging-podinfo=1 "))
	g.Expect(kubectl("get", "configmap", "tenant", "-n", "team2", "-o", "jsonpath={.data.replicas}")).To(Equal("2"))
	// A ResourceSet of the demo's namespace that names no account applies as its namespace's
	// "default" ServiceAccount (--default-service-account=default, as deploy/), which has no
	// rights, and which the sandbox does not even create: nothing is applied.
	locked := filepath.Join(dir, "no-account.yaml")
	g.Expect(os.WriteFile(locked, []byte(`apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: no-account
  namespace: sluice-demo
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: no-account
        namespace: sluice-demo
`), 0o644)).To(Succeed())
	kubectl("apply", "-f", locked)
	g.Eventually(func() string {
		return kubectl("get", "-n", "sluice-demo", "resourceset", "no-account", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
	}, time.Minute, 500*time.Millisecond).Should(Equal("ServiceAccount 'sluice-demo/default' does not exist: create it or set spec.serviceAccountName"))
	_, err = exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "get", "configmap", "-n", "sluice-demo", "no-account").CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "nothing applied")
	gitURL, err := os.ReadFile(filepath.Join(state, "git-url"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(printed.String()).To(ContainSubstring("git clone " + strings.TrimSpace(string(gitURL))))
	t.Run("FlowPage", func(t *testing.T) { flowPageOfTheDemo(t, kubeconfig, strings.TrimSpace(string(gitURL))) })

	g.Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
		}
		done <- cmd.Wait()
	}()
	g.Eventually(done, time.Minute).Should(Receive(BeNil()), "the sandbox exits cleanly on Ctrl-C")
	g.Expect(state).NotTo(BeADirectory(), "the sandbox cleans up after itself")
}
