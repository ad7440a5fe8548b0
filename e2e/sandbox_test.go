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

// `make dev` runs cmd/sandbox: it must bring the whole system up, print a kubeconfig kubectl can
// use, and stop cleanly on Ctrl-C.
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
	defer func() { _ = cmd.Process.Kill() }()

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

	kubectl := exec.Command(filepath.Join(binDir, "kubectl"), "get", "crd", "gates.gating.toolkit.fluxcd.io", "-o", "name")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err = kubectl.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(Equal("customresourcedefinition.apiextensions.k8s.io/gates.gating.toolkit.fluxcd.io\n"))

	g.Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
		}
		done <- cmd.Wait()
	}()
	g.Eventually(done, time.Minute).Should(Receive(BeNil()), "the sandbox exits cleanly on Ctrl-C")
}
