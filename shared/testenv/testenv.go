// Package testenv starts the real test control plane: kube-apiserver and etcd built by
// `make tools` into bin/, through controller-runtime's envtest, with the CRDs of deploy/crds.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Binaries are the programs envtest needs in bin/.
var Binaries = []string{"kube-apiserver", "etcd"}

// ServiceCIDR is the Service range of the test API server: kubeadm's and kind's default, which
// deploy/ gives the controllers' --service-cidr (envtest's own is 10.0.0.0/24).
const ServiceCIDR = "10.96.0.0/12"

// Options configure Start.
type Options struct {
	// Scheme for the returned client; client-go's scheme when nil.
	Scheme *runtime.Scheme
	// ExtraCRDPaths are installed besides deploy/crds (test-only kinds).
	ExtraCRDPaths []string
	// StaticTokens are bearer tokens the API server maps to users of the test's choosing
	// (--token-auth-file), for identities no ServiceAccount can have: system:anonymous, say.
	StaticTokens []StaticToken
}

// StaticToken is a bearer token and the user the API server knows it as.
type StaticToken struct {
	Token, User, UID string
	Groups           []string
}

// Env is a running control plane.
type Env struct {
	Environment *envtest.Environment
	Config      *rest.Config
	Client      client.Client
	// Root is the repository root (the directory holding go.work).
	Root string
	// tokenFile holds the StaticTokens, removed by Stop.
	tokenFile string
}

// Start starts kube-apiserver and etcd from bin/ and installs every CRD of deploy/crds. It fails
// with a message naming `make tools` when a binary is missing.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := filepath.Join(root, "bin")
	if err := CheckBinaries(binDir, Binaries...); err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     append([]string{filepath.Join(root, "deploy", "crds")}, opts.ExtraCRDPaths...),
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceCIDR)
	var tokenFile string
	if len(opts.StaticTokens) > 0 {
		if tokenFile, err = writeTokenFile(opts.StaticTokens); err != nil {
			return nil, err
		}
		env.ControlPlane.GetAPIServer().Configure().Set("token-auth-file", tokenFile)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the test control plane from %s: %w", binDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: c, Root: root, tokenFile: tokenFile}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if e.tokenFile != "" {
		_ = os.Remove(e.tokenFile)
	}
	return e.Environment.Stop()
}

// CheckBinaries fails with a message naming the make target when a tool is missing from binDir.
func CheckBinaries(binDir string, names ...string) error {
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(binDir, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%v not found in %s: run `make tools`", missing, binDir)
	}
	return nil
}

// RepoRoot finds the repository root: the nearest parent of the working directory holding go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory: run from the Sluice repository")
		}
		dir = parent
	}
}
