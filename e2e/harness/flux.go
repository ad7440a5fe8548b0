package harness

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KustomizeController is Flux's own kustomize-controller, built by `make tools` into bin/ with
// its CRD in bin/crds: the consumer of the source-controller's artifacts in the scenarios.
const KustomizeController = "kustomize-controller"

// StartKustomizeController installs the Kustomization CRD and runs Flux's kustomize-controller
// against the cluster of kubeconfig (cfg is its admin config), on free loopback ports, with its
// log in dir. It reads the kubeconfig from KUBECONFIG, as Flux's controllers do.
func StartKustomizeController(cfg *rest.Config, binDir, kubeconfig, dir string) (*Controller, error) {
	bin := filepath.Join(binDir, KustomizeController)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not found: run `make tools`", bin)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(binDir, "crds")}, ErrorIfPathMissing: true,
	}); err != nil {
		return nil, fmt.Errorf("installing the Kustomization CRD: %w", err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		Name:        KustomizeController,
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		HealthAddr:  fmt.Sprintf("127.0.0.1:%d", ports[1]),
		LogPath:     filepath.Join(dir, KustomizeController+".log"),
		bin:         bin,
		env:         []string{"KUBECONFIG=" + kubeconfig},
	}
	c.args = []string{"--metrics-addr=" + c.MetricsAddr, "--health-addr=" + c.HealthAddr, "--log-level=debug"}
	if err := c.start(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err != nil {
		return nil, err
	}
	return c, nil
}
