package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The tests run the built plugin, as kubectl would, against the real kube-apiserver and etcd of
// bin/; they write Gate status themselves where the gating-controller would.
var (
	env        *testenv.Env
	kubeconfig string
	plugin     string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubectl-gate-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	plugin = filepath.Join(dir, "kubectl-gate")
	build := exec.Command("go", "build", "-o", plugin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kubectl-gate:", err)
		return 1
	}

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = gatingv1alpha1.AddToScheme(scheme)
	crds, err := fluxCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(testenv.Options{Scheme: scheme, ExtraCRDPaths: crds})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// fluxCRDs are the CRDs of Flux's kinds bound by the gates annotation, which `make tools` puts in
// bin/crds. Only these files: the directory may hold Flux's own CRDs of kinds deploy/crds
// defines too.
func fluxCRDs() ([]string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []string{
		"kustomize.toolkit.fluxcd.io_kustomizations.yaml",
		"helm.toolkit.fluxcd.io_helmreleases.yaml",
		"image.toolkit.fluxcd.io_imageupdateautomations.yaml",
		"source.toolkit.fluxcd.io_externalartifacts.yaml",
	} {
		p := filepath.Join(root, "bin", "crds", f)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s not found: run `make tools`", p)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// result is what a user sees of one plugin run.
type result struct {
	stdout, stderr string
	exitCode       int
}

// kubectlGate runs the plugin with the test kubeconfig and waits for it.
func kubectlGate(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := pluginCmd(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running kubectl-gate %v: %v", args, err)
	}
	t.Logf("kubectl gate %v: exit %d\nstdout:\n%sstderr:\n%s", args, res.exitCode, res.stdout, res.stderr)
	return res
}

// pluginCmd is the plugin command line; ctx bounds it so that a hung plugin fails the test.
func pluginCmd(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
}
