package build

import (
	"fmt"
	"os"
	"testing"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// testRunner runs the generators of every Builder of the tests, as the controller's runner does.
var testRunner *runner.Client

func TestMain(m *testing.M) {
	// The test binary is also the runner: StartLocal re-executes it with `runner`.
	if runner.IsInvocation(os.Args) {
		os.Exit(runner.Main(os.Args[2:]))
	}
	local, err := runner.StartLocal(runner.LocalOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testRunner = &local.Client
	code := m.Run()
	local.Stop()
	os.Exit(code)
}
