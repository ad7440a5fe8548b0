package owner_test

import (
	"testing"

	"github.com/sluice-gitops/sluice/shared/internal/testapi"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testapi.Main(m, &env) }
