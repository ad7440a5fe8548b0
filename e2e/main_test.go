package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

var (
	env    *testenv.Env
	binDir string
)

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = filepath.Join(env.Root, "bin")
	// As deploy/default installs it, and the harness does for a whole system.
	if err := harness.InstallGatePolicy(context.Background(), env.Client, env.Root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}
