//go:build node

package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-gitops/sluice/e2e/node"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// TestClusterDemo starts what `make cluster` starts (startNodeSandbox: deploy/default's pods on a
// real node, the demo's Git server relayed to them, the demo applied) and checks that the demo
// is Ready with no pending object, then stops it. The node's own tests (e2e/node) check that the
// host is left as it was.
func TestClusterDemo(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.CleanStale(); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	s, err := startNodeSandbox(t.Context(), root, bin, t.TempDir(), filepath.Join(root, "deploy", "examples"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("pods Ready after %v, the demo after %v", s.PodsReady.Round(time.Millisecond), s.Took.Round(time.Millisecond))
	if pending := waitReady(t.Context(), s.Cluster.Env.Client, s.Objects, 0); len(pending) > 0 {
		t.Errorf("demo objects not Ready: %v", pending)
	}
	if s.ReceiverURL == "" || len(s.Objects) == 0 {
		t.Errorf("receiver URL %q, %d demo objects", s.ReceiverURL, len(s.Objects))
	}
}
