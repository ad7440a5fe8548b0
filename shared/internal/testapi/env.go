package testapi

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// StartEnv starts the test control plane with the Consumer kind installed and in the client's
// scheme, for the tests of shared packages.
func StartEnv() (*testenv.Env, error) {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := AddToScheme(scheme); err != nil {
		return nil, err
	}
	_, file, _, _ := runtime.Caller(0)
	return testenv.Start(testenv.Options{
		Scheme:        scheme,
		ExtraCRDPaths: []string{filepath.Join(filepath.Dir(file), "crds")},
	})
}

// Main is the TestMain of a shared package's tests: it starts the environment into *env, runs
// the tests, stops the environment and exits with the tests' code.
func Main(m *testing.M, env **testenv.Env) {
	var err error
	if *env, err = StartEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = (*env).Stop()
	os.Exit(code)
}
