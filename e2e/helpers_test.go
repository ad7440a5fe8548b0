package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// kubeconfigIn writes an admin kubeconfig of the control plane into dir.
func kubeconfigIn(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	NewWithT(t).Expect(env.WriteKubeconfig(path)).To(Succeed())
	return path
}

// startController runs a controller binary with its log and storage in dir, waits until it is
// ready and stops it at the end of the test.
func startController(t testing.TB, name, kubeconfig, dir string, args ...string) *harness.Controller {
	t.Helper()
	g := NewWithT(t)
	c, err := harness.StartController(binDir, name, kubeconfig, dir, args...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop(30 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.Expect(c.WaitReady(ctx)).To(Succeed())
	return c
}
