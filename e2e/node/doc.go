// Package node runs a real single-node Kubernetes cluster on this machine, for tests and for
// users: the parts of `make node-tools` (kubelet, kube-scheduler, kube-proxy, containerd with
// runc, the CNI plugins) joined to a control plane of `make tools` (StartCluster starts
// shared/testenv's; Start joins any cluster given its administrator's kubeconfig).
//
// Nothing is pulled: the pods' sandbox image is built here from a static program
// (internal/pause), and the images pods run are imported from archives (`make images`). Nothing
// listens beyond loopback, the pods' network namespaces and, with StartCluster's InClusterAPI
// (pods reach the API server through the kubernetes Service), the pods' bridge address.
//
// The node changes the host: sysctls (the kubelet's panic and overcommit settings, the bridge's
// ip_forward), a bridge and veths, nftables tables (kube-proxy, the bridge's masquerading,
// portmap), cgroups, mounts and a few directories. Start records the host's state first, in
// /run/sluice-node; Stop undoes every change, and so does the next Start (or CleanStale) after a
// process that died without Stop. Only one node runs on a host at a time.
//
// What these hosts need (root without CAP_SYS_RESOURCE, cgroup v1): containerd's
// restrict_oom_score_adj, the kubelet's failCgroupV1: false with the cgroupfs driver, and
// nftables, since there is no iptables (Debian's nftables package gives nft).
package node
