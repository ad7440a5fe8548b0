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

// FluxCRDs are the CRDs of Flux's kinds that `make tools` puts in bin/crds: Kustomization's from
// the kustomize-controller it builds, HelmRelease's and ImageUpdateAutomation's generated with
// controller-gen from the API modules of helm-controller and image-automation-controller (their
// controllers are not built here).
var FluxCRDs = []string{
	"kustomize.toolkit.fluxcd.io_kustomizations.yaml",
	"helm.toolkit.fluxcd.io_helmreleases.yaml",
	"image.toolkit.fluxcd.io_imageupdateautomations.yaml",
}

// InstallFluxCRDs installs every CRD of binDir/crds into the cluster of cfg and waits until they
// are served (controller-runtime's envtest.InstallCRDs); it fails naming `make tools` when one of
// FluxCRDs is missing.
func InstallFluxCRDs(cfg *rest.Config, binDir string) error {
	dir := filepath.Join(binDir, "crds")
	for _, f := range FluxCRDs {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("%s not found: run `make tools`", filepath.Join(dir, f))
		}
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing Flux's CRDs from %s: %w", dir, err)
	}
	return nil
}

// StartKustomizeController installs the Kustomization CRD and runs Flux's kustomize-controller
// against the cluster of kubeconfig (cfg is its admin config), on free loopback ports, with its
// log in dir, with args added to its own. It reads the kubeconfig from KUBECONFIG, as Flux's
// controllers do.
func StartKustomizeController(cfg *rest.Config, binDir, kubeconfig, dir string, args ...string) (*Controller, error) {
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
	c.args = append([]string{"--metrics-addr=" + c.MetricsAddr, "--health-addr=" + c.HealthAddr, "--log-level=debug"}, args...)
	if err := c.start(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err != nil {
		return nil, err
	}
	return c, nil
}
