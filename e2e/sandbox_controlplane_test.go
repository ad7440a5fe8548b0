package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// syncBuffer is the sandbox's standard error, written by the process while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// `make dev` runs a kube-controller-manager: a tenant removed from the demo's ResourceSet loses
// its namespace for good (not left Terminating). The Git server's errors, such as a clone of a
// repository that does not exist, go to .dev/git-server.log, not into the shell.
func TestSandboxFinishesDeletionsAndLogsGitErrors(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	out, err := exec.Command("go", "build", "-o", sandbox, "./cmd/sandbox").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))

	state := filepath.Join(dir, "state")
	cmd := exec.Command(sandbox, "--bin", binDir, "--state", state)
	cmd.Dir = env.Root
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g.Expect(cmd.Start()).To(Succeed())
	// exited is closed once the sandbox has exited, with its exit error in waitErr. On a
	// failure it is stopped as a user would, so that it stops the control plane too.
	exited := make(chan struct{})
	var waitErr error
	t.Cleanup(func() {
		select {
		case <-exited:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
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
	go func() {
		for lines.Scan() {
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	g.Expect(printed.String()).To(ContainSubstring("kube-controller-manager"))
	g.Expect(filepath.Join(state, "kube-controller-manager.log")).To(BeAnExistingFile())

	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(state, "kubeconfig"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	res, err := kubectl("wait", "-n", "sluice-demo", "--for=condition=Ready", "--timeout=2m", "resourceset/tenants")
	g.Expect(err).NotTo(HaveOccurred(), res)
	res, err = kubectl("get", "namespace", "team1", "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), res)
	res, err = kubectl("patch", "resourceset", "tenants", "-n", "sluice-demo", "--type=merge",
		"-p", `{"spec":{"inputs":[{"tenant":"team2","replicas":2}]}}`)
	g.Expect(err).NotTo(HaveOccurred(), res)
	g.Eventually(func() string {
		out, _ := kubectl("get", "namespace", "team1", "-o", "name")
		return out
	}, time.Minute).Should(ContainSubstring(`namespaces "team1" not found`))

	gitURL, err := os.ReadFile(filepath.Join(state, "git-url"))
	g.Expect(err).NotTo(HaveOccurred())
	missing := strings.TrimSuffix(strings.TrimSpace(string(gitURL)), "/demo.git") + "/missing.git"
	lsRemote := exec.Command("git", "ls-remote", missing)
	lsRemote.Env = testserver.GitEnv()
	out, err = lsRemote.CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "git ls-remote %s: %s", missing, out)
	g.Eventually(func() string {
		data, _ := os.ReadFile(filepath.Join(state, "git-server.log"))
		return string(data)
	}, 10*time.Second).Should(ContainSubstring("Not a git repository"))
	g.Expect(stderr.String()).NotTo(ContainSubstring("Not a git repository"))

	g.Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	g.Eventually(exited, time.Minute).Should(BeClosed())
	g.Expect(waitErr).NotTo(HaveOccurred(), "the sandbox exits cleanly on Ctrl-C:\n%s", stderr.String())
}
