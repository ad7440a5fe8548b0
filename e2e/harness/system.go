package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// System is the control plane with every controller running against it.
type System struct {
	Env         *testenv.Env
	Kubeconfig  string
	Controllers []*Controller
}

// StartSystem starts the control plane (CRDs of deploy/crds installed), writes an admin
// kubeconfig into stateDir, and starts every controller binary of binDir with its log and
// storage in stateDir, waiting until each answers /readyz.
func StartSystem(ctx context.Context, binDir, stateDir string) (*System, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return nil, err
	}
	s := &System{Env: env, Kubeconfig: filepath.Join(stateDir, "kubeconfig")}
	if err := env.WriteKubeconfig(s.Kubeconfig); err != nil {
		_ = s.Stop()
		return nil, err
	}
	for _, name := range Controllers {
		c, err := StartController(binDir, name, s.Kubeconfig, stateDir)
		if err != nil {
			_ = s.Stop()
			return nil, err
		}
		s.Controllers = append(s.Controllers, c)
	}
	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, c := range s.Controllers {
		if err := c.WaitReady(readyCtx); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// Stop stops the controllers (SIGTERM) and then the control plane.
func (s *System) Stop() error {
	var errs []error
	for _, c := range s.Controllers {
		if err := c.Stop(30 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	if err := s.Env.Stop(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
