package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// containerdConfig is containerd's configuration (version 3, containerd 2.x): everything it
// keeps under the state directory, nothing listening but its unix sockets and the CRI streaming
// server on loopback, and only the plugins a node needs.
//
// restrict_oom_score_adj: root in these machines' containers lacks CAP_SYS_RESOURCE, so runc
// cannot give a pod the negative oom_score_adj the kubelet asks for; without it every sandbox
// fails with "can't get final child's PID from pipe: EOF".
// netns_mounts_under_state_dir: the pods' network namespaces are mounted under the state
// directory, not /run/netns.
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q
disabled_plugins = [
  'io.containerd.nri.v1.nri',
  'io.containerd.internal.v1.opt',
  'io.containerd.internal.v1.tracing',
  'io.containerd.tracing.processor.v1.otlp',
  'io.containerd.snapshotter.v1.btrfs',
  'io.containerd.snapshotter.v1.zfs',
  'io.containerd.snapshotter.v1.devmapper',
  'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.snapshotter.v1.erofs',
]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[debug]
  address = ''

[metrics]
  address = ''

[plugins.'io.containerd.shim.v1.manager']
  socket_dir = %[5]q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = %[6]q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = %[7]q
  Root = %[8]q
  SystemdCgroup = false

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = [%[9]q]
  conf_dir = %[10]q

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`

// containerd is the node's container runtime.
type containerd struct {
	*process
	socket string
	ctr    string
}

// startContainerd writes the configuration and starts containerd, waiting until ctr reaches it.
func startContainerd(ctx context.Context, binDir, stateDir string) (*containerd, error) {
	dir := filepath.Join(stateDir, "containerd")
	for _, d := range []string{dir, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(stateDir, "runc")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
	}
	socket := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(containerdConfig,
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), socket, socket+".ttrpc",
		filepath.Join(runDir, "s"), PauseImage,
		filepath.Join(binDir, "runc"), filepath.Join(stateDir, "runc"),
		filepath.Join(binDir, "cni"), filepath.Join(stateDir, "cni", "net.d"))
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	p, err := startProcess(stateDir, "containerd", filepath.Join(binDir, "containerd"), "--config", configPath)
	if err != nil {
		return nil, err
	}
	c := &containerd{process: p, socket: socket, ctr: filepath.Join(binDir, "ctr")}
	for {
		if err := p.running(); err != nil {
			return nil, err
		}
		if _, err := c.run(ctx, "version"); err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			p.stop(5 * time.Second)
			return nil, fmt.Errorf("containerd not answering: %w; its log:\n%s", ctx.Err(), tail(p.logPath, 20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// run runs ctr against this containerd in the kubelet's namespace.
func (c *containerd) run(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"--address", c.socket, "--namespace", "k8s.io"}, args...)
	out, err := exec.CommandContext(ctx, c.ctr, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args[4:], " "), err, out)
	}
	return string(out), nil
}

// importImage loads an image archive (docker-archive or OCI layout tarball) into the kubelet's
// namespace, unpacked for the CRI's snapshotter, so that pods run it without pulling.
func (c *containerd) importImage(ctx context.Context, archive string) error {
	_, err := c.run(ctx, "images", "import", "--snapshotter", "overlayfs", archive)
	return err
}
