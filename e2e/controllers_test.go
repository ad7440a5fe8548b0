package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// commonFlags are the flags every controller takes (README.md, Flags).
var commonFlags = []string{
	"--metrics-addr", "--health-addr", "--enable-leader-election", "--concurrent", "--requeue-dependency",
	"--log-level", "--log-encoding", "--watch-all-namespaces", "--watch-label-selector", "--kube-api-qps",
	"--kube-api-burst", "--interval-jitter-percentage", "--min-retry-delay", "--max-retry-delay", "--kubeconfig",
	"--enable-pprof", "--sharding", "--events-addr",
}

func controllerHelp(t *testing.T, name string) string {
	t.Helper()
	out, _ := exec.Command(filepath.Join(binDir, name), "--help").CombinedOutput()
	NewWithT(t).Expect(string(out)).To(ContainSubstring("Usage of"), "run `make build` for bin/%s", name)
	return string(out)
}

func TestControllerHelpListsEveryFlagWithItsDefault(t *testing.T) {
	for _, name := range harness.Controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			help := controllerHelp(t, name)
			for _, f := range commonFlags {
				g.Expect(help).To(ContainSubstring(f+" "), f)
			}
			g.Expect(help).To(MatchRegexp(`--metrics-addr string\s+The address the Prometheus metrics endpoint binds to\. \(default ":8080"\)`))
			g.Expect(help).To(MatchRegexp(`--concurrent int\s+.*\(default 4\)`))
			g.Expect(help).To(MatchRegexp(`--max-retry-delay duration\s+.*\(default 15m0s\)`))
			// The API server's priority and fairness paces the controllers, not a low client limit.
			g.Expect(help).To(MatchRegexp(`--kube-api-qps float32\s+.*priority and fairness.*\(default 1000\)`))
			g.Expect(help).To(MatchRegexp(`--kube-api-burst int\s+.*\(default 2000\)`))
			if name == "resourceset-controller" || name == "manifest-generator" {
				g.Expect(help).To(ContainSubstring("--default-service-account"))
			}
			g.Expect(help).To(MatchRegexp(`--enable-pprof\s+Serve Go's profiles`))
			g.Expect(help).NotTo(MatchRegexp(`--enable-pprof\s.*\(default true\)`))
			if name == "gating-controller" {
				// A week, the longest a request made through the webhook receiver may last.
				g.Expect(help).To(MatchRegexp(`--receiver-max-duration duration\s+.*\(default 168h0m0s\)`))
			}
			if name == "source-controller" {
				// One source cannot fill the shared storage by default; README.md gives the defaults too.
				readme, err := os.ReadFile(filepath.Join(env.Root, "README.md"))
				g.Expect(err).NotTo(HaveOccurred())
				for flag, size := range map[string]string{
					"--artifact-max-size": "256 MiB", "--git-max-clone-size": "1 GiB", "--oci-max-layer-size": "256 MiB",
				} {
					bytes := map[string]string{"256 MiB": "268435456", "1 GiB": "1073741824"}[size]
					g.Expect(help).To(MatchRegexp(`%s int\s+.*\(default %s\)`, flag, bytes))
					g.Expect(string(readme)).To(ContainSubstring("`%s` (%s)", flag, size))
				}
			}
		})
	}
}

func TestControllersServeProbesAndMetricsAndStopOnSIGTERM(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	for _, name := range harness.Controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := harness.StartController(binDir, name, kubeconfig, t.TempDir(), "--log-level=debug")
			g.Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g.Expect(c.WaitReady(ctx)).To(Succeed())

			g.Expect(get(t, "http://"+c.HealthAddr+"/healthz")).To(Equal("ok"))
			g.Expect(get(t, "http://"+c.MetricsAddr+"/metrics")).To(ContainSubstring("go_goroutines"))
			// Go's profiles are not served unless asked for (--enable-pprof).
			g.Expect(statusOf(t, "http://"+c.MetricsAddr+"/debug/pprof/")).To(Equal(http.StatusNotFound))

			g.Expect(c.Stop(30*time.Second)).To(Succeed(), "a clean exit on SIGTERM")
		})
	}
}

// With --enable-pprof, every controller serves Go's profiles on its metrics port, as Flux's
// controllers do.
func TestControllersServePprofWithTheFlag(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	for _, name := range harness.Controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := startController(t, name, kubeconfig, t.TempDir(), "--enable-pprof")
			// Ready does not wait for the metrics server.
			g.Eventually(func() int { return statusOf(t, "http://"+c.MetricsAddr+"/debug/pprof/") }, 30*time.Second).Should(Equal(http.StatusOK))
			g.Expect(get(t, "http://"+c.MetricsAddr+"/debug/pprof/")).To(ContainSubstring("heap"))
			g.Expect(get(t, "http://"+c.MetricsAddr+"/metrics")).To(ContainSubstring("go_goroutines"))
		})
	}
}

func TestControllerRefusesABadFlagValue(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command(filepath.Join(binDir, "gating-controller"), "--watch-label-selector=a in (", "--kubeconfig=/nonexistent").CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("--watch-label-selector"))
}

// statusOf is the status code of a GET of url; 0 when nothing answers.
func statusOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
	return string(body)
}
