package sessionpod

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

var (
	env       *testenv.Env
	clientset kubernetes.Interface
)

// TestMain starts the real API server (no node: pods are admitted and never run, which is what
// these tests need; the real node's tests run them, e2e/node).
func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	clientset = kubernetes.NewForConfigOrDie(env.Config)
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}
