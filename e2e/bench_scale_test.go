package e2e

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// benchCount is the number of objects of a benchmark: def, or the environment variable env
// (e.g. SLUICE_BENCH_GITREPOS=10000 for the ten times larger run).
func benchCount(b testing.TB, env string, def int) int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	NewWithT(b).Expect(err).NotTo(HaveOccurred(), env)
	NewWithT(b).Expect(n).To(BeNumerically(">", 0), env)
	return n
}

// benchTimeout is how long a benchmark waits for n objects: five minutes per thousand, at least
// five minutes.
func benchTimeout(n int) time.Duration {
	return max(5*time.Minute, time.Duration(n)*300*time.Millisecond)
}

// reportMemory reports a controller's peak RSS and what it grew by per object from idle (its
// peak before the objects) to after, in KiB.
func reportMemory(b *testing.B, idle, after harness.Usage, objects int) {
	b.ReportMetric(float64(after.PeakRSS)/(1<<20), "MiB-peak-rss")
	b.ReportMetric(float64(after.PeakRSS-idle.PeakRSS)/1024/float64(objects), "KiB-rss/object")
}

// profileArgs are the controller's flags for saveHeapProfile: --enable-pprof when
// SLUICE_BENCH_HEAP_PROFILE names a file.
func profileArgs() []string {
	if os.Getenv("SLUICE_BENCH_HEAP_PROFILE") == "" {
		return nil
	}
	return []string{"--enable-pprof"}
}

// saveHeapProfile writes the controller's heap profile (go tool pprof reads it) into the file
// SLUICE_BENCH_HEAP_PROFILE names, if any: where the memory per object goes.
func saveHeapProfile(b *testing.B, c *harness.Controller) {
	path := os.Getenv("SLUICE_BENCH_HEAP_PROFILE")
	if path == "" {
		return
	}
	g := NewWithT(b)
	resp, err := http.Get("http://" + c.MetricsAddr + "/debug/pprof/heap")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	f, err := os.Create(path)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
}
