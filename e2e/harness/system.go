package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// RuntimeNamespace is the controllers' namespace (RUNTIME_NAMESPACE), deploy/'s sluice-system.
const RuntimeNamespace = "sluice-system"

// System is the control plane with every controller running against it.
type System struct {
	Env         *testenv.Env
	Kubeconfig  string
	Controllers []*Controller
	// ControllerManager is the kube-controller-manager of the control plane (not one of the
	// Controllers): namespaces finish deleting and owners' dependents are garbage-collected.
	ControllerManager *ControllerManager

	stateDir string
	// apiServer is the kube-apiserver started by StartAPIServer, nil while envtest's runs;
	// apiServerArgs is the command line of the one StopAPIServer stopped.
	apiServer     *apiServer
	apiServerArgs []string
}

// SystemOptions configure StartSystemWith.
type SystemOptions struct {
	// Args are extra flags per controller name, appended to the harness's own (a flag given
	// twice takes the last value).
	Args map[string][]string
	// CommonArgs are extra flags given to every controller, before Args.
	CommonArgs []string
	// Env configures the control plane.
	Env testenv.Options
}

// StartSystem starts the control plane (CRDs of deploy/crds and the admission policies of
// deploy/gating-controller installed) with a kube-controller-manager, writes an admin kubeconfig
// into stateDir, and starts every controller binary of binDir with its log and storage in
// stateDir and the flags of deploy/ that matter (DefaultArgs), waiting until each answers
// /readyz.
func StartSystem(ctx context.Context, binDir, stateDir string) (*System, error) {
	return StartSystemWith(ctx, binDir, stateDir, SystemOptions{})
}

// StartSystemWith is StartSystem with extra flags for the controllers.
func StartSystemWith(ctx context.Context, binDir, stateDir string, opts SystemOptions) (*System, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	env, err := testenv.Start(opts.Env)
	if err != nil {
		return nil, err
	}
	s := &System{Env: env, Kubeconfig: filepath.Join(stateDir, "kubeconfig"), stateDir: stateDir}
	if err := env.WriteKubeconfig(s.Kubeconfig); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if err := InstallAdmissionPolicies(ctx, env.Client, env.Root); err != nil {
		_ = s.Stop()
		return nil, err
	}
	// The controllers' namespace, as deploy/ creates it: their Leases live there (shards, the
	// receivers' replay memory).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RuntimeNamespace}}
	if err := env.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		_ = s.Stop()
		return nil, err
	}
	// envtest starts only etcd and kube-apiserver, so the kube-controller-manager is the
	// harness's own process, from their directory (bin/, even when binDir holds other builds of
	// the controllers). It runs against the API server's address, not its process: when
	// StopAPIServer and StartAPIServer replace envtest's server with the harness's own, it
	// reconnects and lists again, as in a cluster whose API server restarts, so it is not
	// restarted with it.
	if s.ControllerManager, err = StartControllerManager(env.Environment.BinaryAssetsDirectory, s.Kubeconfig, stateDir); err != nil {
		_ = s.Stop()
		return nil, err
	}
	for _, name := range Controllers {
		args := append(append([]string(nil), opts.CommonArgs...), opts.Args[name]...)
		c, err := StartController(binDir, name, s.Kubeconfig, stateDir, args...)
		if err != nil {
			_ = s.Stop()
			return nil, err
		}
		s.Controllers = append(s.Controllers, c)
	}
	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, c := range append([]*Controller{s.ControllerManager.Controller}, s.Controllers...) {
		if err := c.WaitReady(readyCtx); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// Stop stops the controllers (SIGTERM), then the kube-controller-manager and the control plane
// (a kube-apiserver started again by StartAPIServer first).
func (s *System) Stop() error {
	var errs []error
	for _, c := range s.Controllers {
		if err := c.Stop(30 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	if s.ControllerManager != nil {
		if err := s.ControllerManager.Stop(30 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.ControllerManager.Name, err))
		}
	}
	if err := s.stopAPIServerOnExit(); err != nil {
		errs = append(errs, err)
	}
	if err := s.Env.Stop(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Controller returns the running controller of that name, nil when there is none.
func (s *System) Controller(name string) *Controller {
	for _, c := range s.Controllers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// LogTails returns, for each controller and the kube-controller-manager, a header and the last
// n lines of its log that contain one of substrings (every line when none is given): what a
// failed test prints.
func (s *System) LogTails(n int, substrings ...string) string {
	var b strings.Builder
	all := s.Controllers
	if s.ControllerManager != nil {
		all = append(append([]*Controller(nil), all...), s.ControllerManager.Controller)
	}
	for _, c := range all {
		fmt.Fprintf(&b, "----- %s (%s), last %d lines", c.Name, c.LogPath, n)
		if len(substrings) > 0 {
			fmt.Fprintf(&b, " mentioning %s", strings.Join(substrings, " or "))
		}
		fmt.Fprintf(&b, ":\n%s\n", c.LogTailMatching(n, substrings...))
	}
	return b.String()
}
