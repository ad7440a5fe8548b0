package testenv

import (
	"os"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WriteKubeconfig writes a kubeconfig for a cluster-admin user of the control plane to path, for
// kubectl and for controller processes.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.Environment.AddUser(envtest.User{Name: "sluice-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
