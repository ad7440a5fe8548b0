package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega/format"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testenv"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// One system for the whole package: the control plane, the four controller binaries of bin/
// as processes, and the real upstreams (Git, Helm repository, OCI registry). Every scenario
// works in namespaces of its own, so they can run side by side.
var (
	sys     *harness.System
	servers *harness.Servers
	binDir  string
)

// webhookReceiverAddr is where the gating-controller serves Flux's Receivers.
var webhookReceiverAddr string

// eventReceiverAddr is where the gating-controller receives the controllers' events, Flux's
// kustomize-controller's included.
var eventReceiverAddr string

// freeLoopbackAddrs are n different ports of 127.0.0.1 that were free a moment ago, chosen as the
// harness chooses the controllers' own (harness.FreePorts: never one it chose before).
func freeLoopbackAddrs(n int) ([]string, error) {
	ports, err := harness.FreePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return addrs, nil
}

// gitUser and gitPassword protect the Git server: every GitRepository reads (and every
// ManifestUpdate pushes) with a Secret holding them.
const (
	gitUser     = "fleet-bot"
	gitPassword = "s3cr3t-token"
)

// controllerArgs shorten the waits of the defaults (30s dependency requeue, 15m maximum
// backoff) to what a test can afford; everything else is the controllers' default.
var controllerArgs = []string{"--requeue-dependency=2s", "--max-retry-delay=5s"}

func TestMain(m *testing.M) {
	// Conditions are compared as whole "Status|Reason|Message" strings: show them whole.
	format.TruncatedDiff = false
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = filepath.Join(root, "bin")
	if dir := os.Getenv("SLUICE_BIN_DIR"); dir != "" {
		// Other builds of the binaries (a release, a patched controller) against the same
		// scenarios; the control plane still comes from bin/.
		binDir = dir
	}
	if err := testenv.CheckBinaries(binDir, "kustomize", "kubectl-gate"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stateDir, err := os.MkdirTemp("", "sluice-scenarios-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if code == 0 {
			_ = os.RemoveAll(stateDir)
		} else {
			fmt.Fprintf(os.Stderr, "scenarios: the controller logs and artifacts are kept in %s\n", stateDir)
		}
	}()

	// The servers log their errors (git http-backend's stderr) to a file next to the
	// controller logs.
	serverLog, err := os.Create(filepath.Join(stateDir, "servers.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tb := harness.NewMainTB(serverLog)
	defer func() {
		tb.Close()
		serverLog.Close()
	}()
	defer func() {
		// testserver reports setup failures through Fatalf, which panics in TestMain.
		if r := recover(); r != nil {
			fmt.Fprintln(os.Stderr, "scenarios: starting the servers:", r)
			code = 1
		}
	}()
	servers = harness.StartServers(tb, harness.ServerOptions{
		Git: testserver.Options{Username: gitUser, Password: gitPassword},
	})

	addrs, err := freeLoopbackAddrs(2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	webhookReceiverAddr = addrs[0]
	eventReceiverAddr = addrs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sys, err = harness.StartSystemWith(ctx, binDir, stateDir, harness.SystemOptions{
		// Every controller posts its events to the gating-controller's event receiver, as deploy/
		// wires them, for the Alerts of the alerts scenario.
		CommonArgs: append(controllerArgs[:len(controllerArgs):len(controllerArgs)], "--events-addr=http://"+eventReceiverAddr+"/"),
		// The objects of a shard (a label sharding.fluxcd.io/key, as in Flux) are left to a
		// scenario's own source-controller (faults_storage_test.go).
		Args: map[string][]string{
			"source-controller": {"--watch-label-selector=!" + shardLabel},
			// The automation scenario pushes a tag and waits for its release, to a registry on
			// 127.0.0.1, which the automation may not reach by default.
			// The objects of a shard are left to the registry webhook scenario's own instance.
			"manifest-generator": {"--registry-poll-interval=1s", "--external-service-allowed-cidrs=127.0.0.1/32",
				"--watch-label-selector=!" + shardLabel},
			// The preview scenario's Gitea listens on 127.0.0.1, which the forge providers may
			// not reach by default.
			"resourceset-controller": {"--external-service-allowed-cidrs=127.0.0.1/32"},
			// The push scenario's Gitea delivers its webhooks to the Receivers here.
			// The alerts scenario's Provider listens on 127.0.0.1.
			"gating-controller": {"--webhook-receiver-addr=" + webhookReceiverAddr, "--event-receiver-addr=" + eventReceiverAddr,
				"--notification-allowed-cidrs=127.0.0.1/32"},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenarios: starting the system:", err)
		return 1
	}
	defer func() {
		if err := sys.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "scenarios: stopping the system:", err)
			if code == 0 {
				code = 1
			}
		}
	}()
	defer stopKustomizeController()
	return m.Run()
}
