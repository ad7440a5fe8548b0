// Command sandbox runs Sluice locally behind `make dev`: the real control plane with the CRDs
// installed and every controller binary against it, until Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

func main() {
	binDir := flag.String("bin", "bin", "Directory holding kube-apiserver, etcd and the controller binaries.")
	stateDir := flag.String("state", ".dev", "Directory for the kubeconfig and the controller logs.")
	flag.Parse()

	bin, _ := filepath.Abs(*binDir)
	state, _ := filepath.Abs(*stateDir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sys, err := harness.StartSystem(ctx, bin, state)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
	fmt.Printf(`Sluice is running.

  kubeconfig:  %[1]s
  logs:        %[2]s/<controller>.log
  artifacts:   %[2]s/storage (served by the source-controller, see below)

Use it from another shell:
  export KUBECONFIG=%[1]s
  kubectl get crds
  kubectl apply -f deploy/examples/   # once examples exist

`, sys.Kubeconfig, state)
	for _, c := range sys.Controllers {
		fmt.Printf("  %-24s metrics http://%s/metrics  health http://%s/readyz\n", c.Name, c.MetricsAddr, c.HealthAddr)
		if c.StorageAddr != "" {
			fmt.Printf("  %-24s artifacts http://%s/\n", "", c.StorageAddr)
		}
	}
	fmt.Println("\nPress Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Println("stopping...")
	if err := sys.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}
