package bootstrap

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Go's profiles are served on the metrics address only with --enable-pprof: by default
// /debug/pprof/ is 404 next to a /metrics that answers.
func TestPprofIsServedOnlyWithTheFlag(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	t.Setenv("KUBECONFIG", kubeconfig)

	for _, tc := range []struct {
		args  []string
		pprof int
	}{
		{args: nil, pprof: http.StatusNotFound},
		{args: []string{"--enable-pprof=false"}, pprof: http.StatusNotFound},
		{args: []string{"--enable-pprof"}, pprof: http.StatusOK},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			g := NewWithT(t)
			addr := freeAddr(t)
			var opts Options
			fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
			opts.BindFlags(fs, false)
			g.Expect(fs.Parse(append([]string{"--metrics-addr=" + addr, "--health-addr=0"}, tc.args...))).To(Succeed())
			mgr, err := opts.NewManager("pprof-test", clientgoscheme.Scheme)
			g.Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			t.Cleanup(func() {
				cancel()
				<-done
			})

			status := func(path string) func() (int, error) {
				return func() (int, error) {
					resp, err := http.Get("http://" + addr + path)
					if err != nil {
						return 0, err
					}
					defer resp.Body.Close()
					_, _ = io.Copy(io.Discard, resp.Body)
					return resp.StatusCode, nil
				}
			}
			g.Eventually(status("/metrics"), 30*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK))
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
				g.Expect(status(path)()).To(Equal(tc.pprof), path)
			}
		})
	}
}

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	return ln.Addr().String()
}
