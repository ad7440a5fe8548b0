// Command sandbox runs Sluice locally behind `make dev`: the real control plane with the CRDs
// installed, every controller binary against it, a Git server holding the demo repository, and
// the demo of deploy/examples applied, until Ctrl-C. With --node (`make cluster`) the controllers
// run as deploy/default's pods on a real node of e2e/node instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

func main() {
	binDir := flag.String("bin", "bin", "Directory holding kube-apiserver, etcd and the controller binaries.")
	stateDir := flag.String("state", ".dev", "Directory for the kubeconfig, the controller logs and the artifacts; removed on exit.")
	examplesDir := flag.String("examples", "deploy/examples", "Directory of the demo: its *.yaml objects are applied, its repository/ is served over Git.")
	onNode := flag.Bool("node", false, "Run deploy/default's controllers as pods on a real node (e2e/node; as root) instead of the binaries.")
	flag.Parse()

	bin, _ := filepath.Abs(*binDir)
	state, _ := filepath.Abs(*stateDir)
	examples, _ := filepath.Abs(*examplesDir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := run
	if *onNode {
		start = runNode
	}
	if err := start(ctx, bin, state, examples); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin, state, examples string) (err error) {
	// A previous run killed without cleaning up left its state: start afresh.
	if err := os.RemoveAll(state); err != nil {
		return err
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return err
	}
	// What the test servers log (git http-backend's errors, such as "Not a git repository" for a
	// clone of a repository that does not exist) goes to a log of its own, as the controllers'
	// does, not into the shell running `make dev`.
	gitLog, err := os.Create(filepath.Join(state, "git-server.log"))
	if err != nil {
		return err
	}
	defer gitLog.Close()
	tb := harness.NewMainTB(gitLog)
	defer tb.Close()
	repo, err := serveRepository(tb, filepath.Join(examples, "repository"))
	if err != nil {
		return err
	}

	// The gating-controller's webhook receivers (the gate receiver, Flux's Receivers), on free
	// loopback ports.
	ports, err := harness.FreePorts(2)
	if err != nil {
		return err
	}
	receiverURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	webhookURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])

	fmt.Println("starting the control plane and the controllers...")
	sys, err := harness.StartSystemWith(ctx, bin, state, harness.SystemOptions{Args: map[string][]string{
		"gating-controller": {"--receiver-addr=" + strings.TrimPrefix(receiverURL, "http://"),
			"--webhook-receiver-addr=" + strings.TrimPrefix(webhookURL, "http://")},
	}})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping...")
		if stopErr := sys.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		_ = os.RemoveAll(state)
	}()
	gitURLFile := filepath.Join(state, "git-url")
	if err := os.WriteFile(gitURLFile, []byte(repo.HTTPURL()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(state, "receiver-url"), []byte(receiverURL+"\n"), 0o644); err != nil {
		return err
	}

	objects, err := demoObjects(examples, repo.HTTPURL())
	if err != nil {
		return err
	}
	if err := applyDemo(ctx, sys.Env.Client, objects); err != nil {
		return err
	}
	fmt.Printf("demo applied from %s, waiting for it to be ready...\n", examples)
	if pending := waitReady(ctx, sys.Env.Client, objects, 2*time.Minute); len(pending) > 0 {
		fmt.Printf("not ready yet (see the controller logs):\n  %s\n", strings.Join(pending, "\n  "))
	}
	printTour(sys, state, repo.HTTPURL(), receiverURL, webhookURL)
	<-ctx.Done()
	return nil
}

func printTour(sys *harness.System, state, gitURL, receiverURL, webhookURL string) {
	fmt.Printf(`
Sluice is running, with the demo in the namespace sluice-demo.

  kubeconfig:       %[1]s/kubeconfig
  demo repository:  %[2]s  (also in %[1]s/git-url; push to it, no credentials)
  gate receiver:    %[3]s/gates/<namespace>/<name>/open|close  (also in %[1]s/receiver-url)
  Flux Receivers:   %[4]s<status.webhookPath of a Receiver>
  logs:             %[1]s/<controller>.log, kube-controller-manager.log, git-server.log

`, state, gitURL, receiverURL, webhookURL)
	fmt.Printf("  %-24s namespaces finish deleting, owners' dependents are garbage-collected\n", sys.ControllerManager.Name)
	for _, c := range sys.Controllers {
		fmt.Printf("  %-24s metrics http://%s/metrics  health http://%s/readyz\n", c.Name, c.MetricsAddr, c.HealthAddr)
		if c.StorageAddr != "" {
			fmt.Printf("  %-24s artifacts http://%s/\n", "", c.StorageAddr)
		}
	}
	fmt.Printf(`
Try this, from another shell in the repository (the README's tour goes further):
  export KUBECONFIG=%[1]s/kubeconfig PATH=$PWD/bin:$PATH
  kubectl get gitrepositories,helmcharts,manifestgenerations,resourcesets,gates -A
  kubectl -n sluice-demo get deployments
  git clone %[2]s /tmp/demo    # edit, commit, git push: applied within ~10 s
  kubectl gate close change-freeze -n sluice-demo    # new commits wait...
  kubectl gate open bypass-signoff "Patching a CVE" -n sluice-demo    # ...until a bypass

Press Ctrl-C to stop.
`, state, gitURL)
}
