package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}
