package status_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sluice-gitops/sluice/shared/internal/testapi"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = testapi.AddToScheme(scheme)
	var err error
	env, err = testenv.Start(testenv.Options{
		Scheme:        scheme,
		ExtraCRDPaths: []string{filepath.Join("..", "internal", "testapi", "crds")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}
