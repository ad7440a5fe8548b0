package harness

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// ControllerManagerName is the kube-controller-manager's binary, built by `make tools` into the
// directory of kube-apiserver and etcd, and its log's name (<state>/kube-controller-manager.log).
const ControllerManagerName = "kube-controller-manager"

// ControllerManagerControllers are the only controllers it runs: those that finish deletions.
// The namespace controller deletes a deleted namespace's objects and then the namespace, which
// otherwise stays Terminating; the garbage collector deletes the dependents of a deleted owner
// (ownerReferences). Neither needs another controller: no service account tokens, since it uses
// the admin's credentials.
var ControllerManagerControllers = []string{"namespace-controller", "garbage-collector-controller"}

// ControllerManager is a running kube-controller-manager: a Controller process but for Stop.
type ControllerManager struct {
	*Controller
}

// StartControllerManager runs the kube-controller-manager of controlPlaneDir against the cluster
// of kubeconfig, its log in dir/kube-controller-manager.log and its generated serving
// certificate in dir/kube-controller-manager. Wait for it with WaitReady (its /healthz).
func StartControllerManager(controlPlaneDir, kubeconfig, dir string) (*ControllerManager, error) {
	return StartControllerManagerWith(controlPlaneDir, kubeconfig, dir, ControllerManagerControllers)
}

// StartControllerManagerWith is StartControllerManager running the given controllers, with
// extraArgs appended to its flags: a real node (e2e/node) needs others, among them
// node-lifecycle, which lifts a new node's not-ready taint.
func StartControllerManagerWith(controlPlaneDir, kubeconfig, dir string, controllers []string, extraArgs ...string) (*ControllerManager, error) {
	if err := testenv.CheckBinaries(controlPlaneDir, ControllerManagerName); err != nil {
		return nil, err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		Name:       ControllerManagerName,
		HealthAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		LogPath:    filepath.Join(dir, ControllerManagerName+".log"),
		bin:        filepath.Join(controlPlaneDir, ControllerManagerName),
	}
	c.args = []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		// One instance, with the admin's credentials for every controller.
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		// Deleting a namespace lists and deletes every namespaced kind the API server serves
		// (about 60 with the CRDs): the default 20 requests/s would make each take seconds.
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		// Its secure port serves /healthz (always allowed) for WaitReady, on loopback only.
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]),
		"--cert-dir=" + filepath.Join(dir, ControllerManagerName),
	}
	c.args = append(c.args, extraArgs...)
	c.healthURL = "https://" + c.HealthAddr + "/healthz"
	// Its certificate is self-signed at start; the probe only asks whether it is up.
	c.healthClient = &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	if err := c.start(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err != nil {
		return nil, err
	}
	return &ControllerManager{c}, nil
}

// Stop sends SIGTERM and waits for the process to exit, killing it after timeout. The
// kube-controller-manager does not catch SIGTERM: dying of it is its clean stop, not an error.
func (m *ControllerManager) Stop(timeout time.Duration) error {
	err := m.Controller.Stop(timeout)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() && status.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}
