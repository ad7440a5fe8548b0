package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// Name is the node's name. The API server reaches a node's kubelet (logs, exec) at the node's
// name first: "localhost" resolves to the loopback address the kubelet listens on.
const Name = "localhost"

// DefaultPodCIDR is the pods' address range when Options.PodCIDR is empty: private, and apart
// from the control plane's Service range (testenv.ServiceCIDR, 10.96.0.0/12).
const DefaultPodCIDR = "10.213.0.0/24"

// Controllers are the kube-controller-manager controllers a node needs besides those of the
// harness (namespace, garbage collector): node-lifecycle lifts the not-ready taint of a node
// that became Ready (without it pods stay Pending); the workload controllers make pods of
// Deployments, Jobs and the rest; endpointslice gives kube-proxy the services' backends; the
// service account ones give pods their tokens when the API server mounts them.
var Controllers = []string{
	"node-lifecycle-controller", "taint-eviction-controller", "pod-garbage-collector-controller",
	"deployment-controller", "replicaset-controller", "statefulset-controller", "daemonset-controller",
	"job-controller", "cronjob-controller", "ttl-after-finished-controller",
	"endpointslice-controller", "endpointslice-mirroring-controller",
	"serviceaccount-controller", "serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
}

// Options configure Start.
type Options struct {
	// BinDir holds the binaries of `make tools` and `make node-tools`.
	BinDir string
	// StateDir receives the node's configuration, data and logs (<part>.log).
	StateDir string
	// Kubeconfig is an administrator's kubeconfig of the cluster the node joins; its kubelet,
	// kube-scheduler, kube-proxy and kube-controller-manager use it.
	Kubeconfig string
	// Images are image archives (docker-archive or OCI tarballs, e.g. bin/images/*.tar of `make
	// images`) imported into containerd, so that pods run them without a registry.
	Images []string
	// PodCIDR is the pods' address range; DefaultPodCIDR when empty.
	PodCIDR string
	// ExtraControllers run in the node's kube-controller-manager besides Controllers: the
	// namespace and garbage-collector controllers when no harness.System runs them.
	ExtraControllers []string
	// ServiceAccountKeyFile and RootCAFile are the API server's token signing key and CA, for
	// the service account token controllers; they are left off when empty.
	ServiceAccountKeyFile, RootCAFile string
	// DNS runs CoreDNS (`make node-tools`) as a Deployment in kube-system behind the Service
	// kube-dns at DNSServiceIP (DefaultDNSServiceIP when empty), the pods' nameserver: they
	// resolve the cluster's Services and Pods, and nothing else.
	DNS          bool
	DNSServiceIP string
	// Log, when set, reports how long each step took.
	Log func(format string, args ...any)

	// controlPlaneDirs are those of StartCluster's control plane (hostRecord.ControlPlaneDirs).
	controlPlaneDirs []string
}

// Node is a running single node: containerd, kubelet, kube-proxy, kube-scheduler and a
// kube-controller-manager with the node's controllers, on this host.
type Node struct {
	Client   kubernetes.Interface
	StateDir string

	opts              Options
	record            *hostRecord
	containerd        *containerd
	kubelet           *process
	proxy             *process
	scheduler         *process
	controllerManager *harness.ControllerManager
	relay             *apiRelay
}

// Start starts a node that joins the cluster of opts.Kubeconfig and waits until it is Ready and
// schedulable. It first undoes what a node that did not stop (a killed test) left on the host,
// and records the host's state, which Stop restores. It fails with a message naming the make
// target when a binary is missing. On error, what it started is stopped and undone.
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	if err := checkBinaries(opts.BinDir, opts.DNS); err != nil {
		return nil, err
	}
	if opts.PodCIDR == "" {
		opts.PodCIDR = DefaultPodCIDR
	}
	if opts.DNSServiceIP == "" {
		opts.DNSServiceIP = DefaultDNSServiceIP
	}
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	stateDir, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	record, err := claimHost(stateDir, opts.controlPlaneDirs)
	if err != nil {
		return nil, err
	}
	n = &Node{Client: client, StateDir: stateDir, opts: opts, record: record}
	defer func() {
		if err != nil {
			if stopErr := n.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (and stopping: %v)", err, stopErr)
			}
			n = nil
		}
	}()
	step := time.Now()
	done := func(what string) {
		opts.Log("node: %s in %v", what, time.Since(step).Round(time.Millisecond))
		step = time.Now()
	}

	if err := createCgroupRoot(); err != nil {
		return n, err
	}
	if err := writeCNIConfig(stateDir, opts.PodCIDR); err != nil {
		return n, err
	}
	if n.containerd, err = startContainerd(ctx, opts.BinDir, stateDir); err != nil {
		return n, err
	}
	done("containerd started")
	root, err := e2eDir()
	if err != nil {
		return n, err
	}
	pause, err := pauseArchive(root, stateDir)
	if err != nil {
		return n, err
	}
	archives := append([]string{pause}, opts.Images...)
	if opts.DNS {
		dns, err := coreDNSArchive(opts.BinDir, root, stateDir)
		if err != nil {
			return n, err
		}
		archives = append(archives, dns)
	}
	for _, archive := range archives {
		if err := n.containerd.importImage(ctx, archive); err != nil {
			return n, err
		}
	}
	done(fmt.Sprintf("%d images built and imported", len(archives)))

	if err := n.startControlPlaneParts(); err != nil {
		return n, err
	}
	if err := n.startKubelet(); err != nil {
		return n, err
	}
	if err := n.startKubeProxy(); err != nil {
		return n, err
	}
	if err := n.waitReady(ctx); err != nil {
		return n, err
	}
	done("kubelet and kube-proxy started, node Ready")
	if opts.DNS {
		api, err := apiServerAddress(opts.Kubeconfig)
		if err != nil {
			return n, err
		}
		socketDir := filepath.Join(stateDir, "apiserver")
		if n.relay, err = startAPIRelay(socketDir, api); err != nil {
			return n, err
		}
		if err := n.deployDNS(ctx, opts.DNSServiceIP, socketDir); err != nil {
			return n, err
		}
		done("CoreDNS Ready")
	}
	return n, nil
}

// e2eDir is the e2e module's directory, where the pause program is built: beside this package.
func e2eDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return filepath.Join(d, "e2e"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("go.work not found above %s: run from the Sluice repository", dir)
		}
	}
}

// startControlPlaneParts starts the node's kube-controller-manager and the kube-scheduler.
func (n *Node) startControlPlaneParts() error {
	var extra []string
	if n.opts.ServiceAccountKeyFile != "" {
		extra = append(extra, "--service-account-private-key-file="+n.opts.ServiceAccountKeyFile)
	}
	if n.opts.RootCAFile != "" {
		extra = append(extra, "--root-ca-file="+n.opts.RootCAFile)
	}
	controllers := append(append([]string(nil), Controllers...), n.opts.ExtraControllers...)
	if n.opts.ServiceAccountKeyFile == "" {
		controllers = remove(controllers, "serviceaccount-token-controller")
	}
	if n.opts.RootCAFile == "" {
		controllers = remove(controllers, "root-ca-certificate-publisher-controller")
	}
	var err error
	if n.controllerManager, err = harness.StartControllerManagerWith(n.opts.BinDir, n.opts.Kubeconfig, n.StateDir, controllers, extra...); err != nil {
		return err
	}
	ports, err := harness.FreePorts(1)
	if err != nil {
		return err
	}
	n.scheduler, err = startProcess(n.StateDir, "kube-scheduler", filepath.Join(n.opts.BinDir, "kube-scheduler"),
		"--kubeconfig="+n.opts.Kubeconfig,
		"--authentication-kubeconfig="+n.opts.Kubeconfig,
		"--authorization-kubeconfig="+n.opts.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+filepath.Join(n.StateDir, "kube-scheduler"))
	return err
}

func remove(list []string, name string) []string {
	var out []string
	for _, s := range list {
		if s != name {
			out = append(out, s)
		}
	}
	return out
}

// startKubelet starts the kubelet with its root, certificates and configuration under the state
// directory. --hostname-override names the node, and the API server reaches the kubelet by that
// name. No --node-ip: the kubelet refuses a loopback one, and reports the host's address as the
// node's InternalIP, where nothing of the node listens.
func (n *Node) startKubelet() error {
	ports, err := harness.FreePorts(2)
	if err != nil {
		return err
	}
	dir := filepath.Join(n.StateDir, "kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	config := filepath.Join(n.StateDir, "kubelet.json")
	var clusterDNS []string
	if n.opts.DNS {
		clusterDNS = []string{n.opts.DNSServiceIP}
	}
	if err := writeKubeletConfig(config, n.StateDir, n.containerd.socket, ports[0], ports[1], clusterDNS); err != nil {
		return err
	}
	n.kubelet, err = startProcess(n.StateDir, "kubelet", filepath.Join(n.opts.BinDir, "kubelet"),
		"--config="+config,
		"--kubeconfig="+n.opts.Kubeconfig,
		"--root-dir="+dir,
		"--cert-dir="+filepath.Join(dir, "pki"),
		"--hostname-override="+Name)
	return err
}

func (n *Node) startKubeProxy() error {
	ports, err := harness.FreePorts(2)
	if err != nil {
		return err
	}
	config := filepath.Join(n.StateDir, "kube-proxy.json")
	if err := writeKubeProxyConfig(config, n.opts.Kubeconfig, n.opts.PodCIDR, ports[0], ports[1]); err != nil {
		return err
	}
	n.proxy, err = startProcess(n.StateDir, "kube-proxy", filepath.Join(n.opts.BinDir, "kube-proxy"), "--config="+config)
	return err
}

// waitReady waits until the node is Ready without the not-ready taint, and the kube-proxy and
// kube-controller-manager answer their health checks.
func (n *Node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := n.controllerManager.WaitReady(ctx); err != nil {
		return err
	}
	for {
		for _, p := range []*process{n.containerd.process, n.kubelet, n.proxy, n.scheduler} {
			if err := p.running(); err != nil {
				return err
			}
		}
		node, err := n.Client.CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
		if err == nil && nodeReady(node) {
			return nil
		}
		select {
		case <-ctx.Done():
			state := "not registered"
			if node != nil && err == nil {
				state = fmt.Sprintf("conditions %v, taints %v", node.Status.Conditions, node.Spec.Taints)
			}
			return fmt.Errorf("node %s not Ready: %w (%s); the kubelet's log (%s) ends with:\n%s",
				Name, ctx.Err(), state, n.kubelet.logPath, tail(n.kubelet.logPath, 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop stops the node's processes and undoes every change to the host (see hostRecord.undo):
// after it, the host is as Start found it. The Node object stays in the cluster, NotReady.
func (n *Node) Stop() error {
	if n == nil || n.record == nil {
		return nil
	}
	// The kubelet first, so that it does not start what the others' stop takes away.
	n.kubelet.stop(10 * time.Second)
	n.proxy.stop(10 * time.Second)
	n.scheduler.stop(10 * time.Second)
	var errs []error
	if n.controllerManager != nil {
		errs = append(errs, n.controllerManager.Stop(10*time.Second))
	}
	if n.containerd != nil {
		n.containerd.stop(10 * time.Second)
	}
	n.relay.stop()
	errs = append(errs, n.record.undo())
	n.record = nil
	return errors.Join(errs...)
}
