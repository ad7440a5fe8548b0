package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// writeCNIConfig writes the pods' network: a bridge of its own with host-local addresses from
// podCIDR (state under the state directory), masquerading traffic that leaves the range, and
// portmap for hostPorts. Both program nftables, not iptables (which these hosts lack). containerd
// adds the loopback plugin itself.
func writeCNIConfig(stateDir, podCIDR string) error {
	dir := filepath.Join(stateDir, "cni", "net.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "sluice",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": bridgeName,
				"isGateway": true, "ipMasq": true, "ipMasqBackend": "nftables", "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(stateDir, "cni", "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}, "backend": "nftables"},
		},
	}
	return writeJSON(filepath.Join(dir, "10-sluice.conflist"), conf)
}

// writeKubeletConfig writes the kubelet's configuration. The settings these hosts need: cgroup
// v1 (failCgroupV1: false) with the cgroupfs driver, swap allowed, no node allocatable
// enforcement; it listens on loopback only, without its read-only port, and lets every
// request through (the API server calls it without a client certificate for logs and exec).
// Its cgroups go under cgroupRoot, its pod logs under the state directory; images are never
// garbage-collected (they were imported, nobody can pull them again) and disk eviction starts
// only when the disk is nearly full, so that a busy development machine does not evict tests.
func writeKubeletConfig(path, stateDir, socket string, port, healthzPort int, clusterDNS []string) error {
	conf := map[string]any{
		"apiVersion":                  "kubelet.config.k8s.io/v1beta1",
		"kind":                        "KubeletConfiguration",
		"address":                     "127.0.0.1",
		"port":                        port,
		"readOnlyPort":                0,
		"healthzBindAddress":          "127.0.0.1",
		"healthzPort":                 healthzPort,
		"authentication":              map[string]any{"anonymous": map[string]bool{"enabled": true}, "webhook": map[string]bool{"enabled": false}},
		"authorization":               map[string]string{"mode": "AlwaysAllow"},
		"containerRuntimeEndpoint":    "unix://" + socket,
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  "/" + cgroupRoot,
		"failCgroupV1":                false,
		"failSwapOn":                  false,
		"enforceNodeAllocatable":      []string{},
		"makeIPTablesUtilChains":      false,
		"podLogsDir":                  filepath.Join(stateDir, "pod-logs"),
		"volumePluginDir":             filepath.Join(stateDir, "kubelet", "volume-plugins"),
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%",
		},
		"clusterDomain": "cluster.local",
		"clusterDNS":    clusterDNS,
		// Status and lease updates every few seconds: Ready is seen soon after a change.
		"nodeStatusUpdateFrequency": "2s",
		"syncFrequency":             "10s",
	}
	return writeJSON(path, conf)
}

// writeKubeProxyConfig writes kube-proxy's configuration: nftables mode; its ports on loopback;
// node ports only on the pods' bridge; every service connection masqueraded, so that a pod
// reaching a service backed by a pod on the same bridge gets the answer through the host
// (without it the reply would skip the service's address translation); and conntrack left as
// the host has it (zero values: kube-proxy changes no sysctl).
func writeKubeProxyConfig(path, kubeconfig, podCIDR string, healthzPort, metricsPort int) error {
	conf := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "nftables",
		"clientConnection":   map[string]string{"kubeconfig": kubeconfig},
		"hostnameOverride":   Name,
		"bindAddress":        "127.0.0.1",
		"healthzBindAddress": fmt.Sprintf("127.0.0.1:%d", healthzPort),
		"metricsBindAddress": fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"clusterCIDR":        podCIDR,
		"nodePortAddresses":  []string{podCIDR},
		"nftables":           map[string]any{"masqueradeAll": true},
		"conntrack": map[string]any{
			"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
		},
	}
	return writeJSON(path, conf)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
