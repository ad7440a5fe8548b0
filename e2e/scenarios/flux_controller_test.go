package scenarios

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// Flux's kustomize-controller acts on every Kustomization of the cluster, so the scenarios that
// need it share one process, started by the first of them and stopped with the system.
var (
	kustomizeOnce sync.Once
	kustomizeCtl  *harness.Controller
	kustomizeErr  error
)

// kustomizeController starts Flux's kustomize-controller once and waits until it is ready. It
// posts its events to the gating-controller, as the other controllers do.
func kustomizeController(t *testing.T) *harness.Controller {
	t.Helper()
	kustomizeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-kustomize-controller-")
		if err != nil {
			kustomizeErr = err
			return
		}
		kustomizeCtl, kustomizeErr = harness.StartKustomizeController(sys.Env.Config, sys.Env.Environment.BinaryAssetsDirectory, sys.Kubeconfig, dir,
			"--events-addr=http://"+eventReceiverAddr+"/")
		if kustomizeErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		kustomizeErr = kustomizeCtl.WaitReady(ctx)
	})
	if kustomizeErr != nil {
		t.Fatalf("kustomize-controller: %v", kustomizeErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kustomize-controller log:\n%s", kustomizeCtl.LogTail(60))
		}
	})
	return kustomizeCtl
}

// stopKustomizeController stops the shared kustomize-controller, if it was started.
func stopKustomizeController() {
	if kustomizeCtl != nil {
		_ = kustomizeCtl.Stop(30 * time.Second)
	}
}
