package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Controllers are the binaries `make build` puts in bin/.
var Controllers = []string{"source-controller", "gating-controller", "resourceset-controller", "manifest-generator"}

// Controller is a running controller process.
type Controller struct {
	Name        string
	MetricsAddr string
	HealthAddr  string
	// StorageAddr is the artifact server of the source-controller.
	StorageAddr string
	LogPath     string
	cmd         *exec.Cmd
	done        chan error
}

// StartController runs bin/<name> against the cluster of kubeconfig on free loopback ports, with
// its logs in dir/<name>.log (and, for the source-controller, its artifacts in dir/storage; for
// the manifest-generator, its checkouts in dir/generator).
// extraArgs are appended to the common flags.
func StartController(binDir, name, kubeconfig, dir string, extraArgs ...string) (*Controller, error) {
	bin := filepath.Join(binDir, name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not found: run `make build`", bin)
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		Name:        name,
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		HealthAddr:  fmt.Sprintf("127.0.0.1:%d", ports[1]),
		LogPath:     filepath.Join(dir, name+".log"),
		done:        make(chan error, 1),
	}
	if name == "source-controller" {
		c.StorageAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
		extraArgs = append([]string{
			"--storage-path=" + filepath.Join(dir, "storage"),
			"--storage-addr=" + c.StorageAddr,
			"--storage-adv-addr=" + c.StorageAddr,
		}, extraArgs...)
	}
	if name == "manifest-generator" {
		// Its source checkouts; generators find kustomize and helm next to the controllers.
		extraArgs = append([]string{
			"--storage-path=" + filepath.Join(dir, "generator"),
			"--generator-path=" + filepath.Dir(bin) + ":/usr/local/bin:/usr/bin:/bin",
		}, extraArgs...)
	}
	logFile, err := os.Create(c.LogPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-addr=" + c.MetricsAddr,
		"--health-addr=" + c.HealthAddr,
	}, extraArgs...)
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.Env = append(os.Environ(), "RUNTIME_NAMESPACE=sluice-system")
	if err := c.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		c.done <- c.cmd.Wait()
		logFile.Close()
	}()
	return c, nil
}

// WaitReady waits until /readyz answers 200, or fails when the process exits first.
func (c *Controller) WaitReady(ctx context.Context) error {
	url := "http://" + c.HealthAddr + "/readyz"
	for {
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("%s exited before it was ready (%v); see %s", c.Name, err, c.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w; see %s", c.Name, ctx.Err(), c.LogPath)
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit, killing it after timeout. It returns the
// process's exit error (nil for a clean exit).
func (c *Controller) Stop(timeout time.Duration) error {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM", c.Name, timeout)
	}
}

// FreePorts returns n loopback ports free at the time of the call.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
