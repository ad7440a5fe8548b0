package apply

import (
	"fmt"
	"os"
	"testing"

	"github.com/sluice-gitops/sluice/shared/internal/testapi"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testapi.StartEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}
