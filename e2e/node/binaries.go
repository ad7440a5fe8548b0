package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NodeBinaries are the programs `make node-tools` builds into bin/: the CNI plugins in bin/cni/.
var NodeBinaries = []string{
	"kubelet", "kube-scheduler", "kube-proxy",
	"containerd", "ctr", "containerd-shim-runc-v2", "runc",
	"cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap",
}

// ControlPlaneBinaries are those of `make tools` the node runs besides envtest's.
var ControlPlaneBinaries = []string{"kube-apiserver", "etcd", "kube-controller-manager"}

// checkBinaries fails with a message naming the make target that builds what is missing, and the
// Debian package of nft, which kube-proxy and the CNI plugins run (nftables mode).
func checkBinaries(binDir string, withDNS bool) error {
	var msgs []string
	missing := func(names []string) []string {
		var out []string
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(binDir, n)); err != nil {
				out = append(out, n)
			}
		}
		return out
	}
	node := NodeBinaries
	if withDNS {
		node = append(append([]string(nil), node...), "coredns")
	}
	if m := missing(node); len(m) > 0 {
		msgs = append(msgs, fmt.Sprintf("%s not found in %s: run `make node-tools`", strings.Join(m, ", "), binDir))
	}
	if m := missing(ControlPlaneBinaries); len(m) > 0 {
		msgs = append(msgs, fmt.Sprintf("%s not found in %s: run `make tools`", strings.Join(m, ", "), binDir))
	}
	if _, err := exec.LookPath("nft"); err != nil {
		msgs = append(msgs, "nft not found: apt-get install nftables (kube-proxy and the CNI plugins program nftables with it)")
	}
	if len(msgs) > 0 {
		return fmt.Errorf("a real node cannot start: %s", strings.Join(msgs, "; "))
	}
	return nil
}
