package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// Cluster is a control plane (shared/testenv: etcd and kube-apiserver with the CRDs) with a
// real node.
type Cluster struct {
	Env        *testenv.Env
	Kubeconfig string
	Node       *Node

	relay *serviceRelay
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	Options
	// InClusterAPI makes the API server serve pods as a real cluster's does: pods reach it
	// through the kubernetes Service (its endpoint is the pods' bridge address, relayed to the
	// API server on loopback), its certificate is valid for the Service, it admits pods with
	// the ServiceAccount admission plugin, and the kube-controller-manager's token controllers
	// and the kube-root-ca.crt publisher run with its keys. So pods with ServiceAccount tokens
	// (deploy/'s controllers, in-cluster clients) work. Without it, the control plane is
	// shared/testenv's, which pods do not reach.
	InClusterAPI bool
}

// StartCluster starts the control plane, writes an administrator's kubeconfig into opts.StateDir
// and starts a node against it whose kube-controller-manager also runs the namespace and
// garbage-collector controllers. opts.Kubeconfig is set here; opts.BinDir defaults to the
// repository's bin/.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	var env *testenv.Env
	var certs *apiServerCerts
	var err error
	if opts.StateDir, err = filepath.Abs(opts.StateDir); err != nil {
		return nil, err
	}
	if opts.InClusterAPI {
		if opts.PodCIDR == "" {
			opts.PodCIDR = DefaultPodCIDR
		}
		gateway, err := bridgeAddress(opts.PodCIDR)
		if err != nil {
			return nil, err
		}
		if certs, err = writeAPIServerCerts(filepath.Join(opts.StateDir, "apiserver-certs"), gateway, net.ParseIP(KubernetesServiceIP)); err != nil {
			return nil, err
		}
		env, err = startInClusterControlPlane(filepath.Join(opts.StateDir, "apiserver-certs"), certs, gateway)
		if err != nil {
			return nil, err
		}
		opts.ServiceAccountKeyFile, opts.RootCAFile = certs.SigningKeyFile, certs.CAFile
	} else if env, err = testenv.Start(testenv.Options{}); err != nil {
		return nil, err
	}
	if opts.BinDir == "" {
		opts.BinDir = filepath.Join(env.Root, "bin")
	}
	c := &Cluster{Env: env, Kubeconfig: filepath.Join(opts.StateDir, "kubeconfig")}
	fail := func(err error) (*Cluster, error) {
		c.relay.stop()
		return nil, errors.Join(err, env.Stop())
	}
	if err := env.WriteKubeconfig(c.Kubeconfig); err != nil {
		return fail(err)
	}
	plane := env.Environment.ControlPlane
	if opts.InClusterAPI {
		gateway, _ := bridgeAddress(opts.PodCIDR)
		port := plane.APIServer.SecureServing.Port
		if c.relay, err = startServiceRelay(net.JoinHostPort(gateway.String(), port), net.JoinHostPort("127.0.0.1", port)); err != nil {
			return fail(fmt.Errorf("the kubernetes Service's relay: %w", err))
		}
	}
	opts.Kubeconfig = c.Kubeconfig
	if plane.APIServer != nil && plane.APIServer.CertDir != "" && !opts.InClusterAPI {
		opts.controlPlaneDirs = append(opts.controlPlaneDirs, plane.APIServer.CertDir)
	}
	if plane.Etcd != nil && plane.Etcd.DataDir != "" {
		opts.controlPlaneDirs = append(opts.controlPlaneDirs, plane.Etcd.DataDir)
	}
	opts.ExtraControllers = append(opts.ExtraControllers, "namespace-controller", "garbage-collector-controller")
	if c.Node, err = Start(ctx, opts.Options); err != nil {
		return fail(err)
	}
	return c, nil
}

// KubernetesServiceIP is the kubernetes Service's address: the first of the control plane's
// Service range (testenv.ServiceCIDR, 10.96.0.0/12).
const KubernetesServiceIP = "10.96.0.1"

// bridgeAddress is the pods' gateway: the first address of podCIDR, which the CNI bridge
// (isGateway) takes.
func bridgeAddress(podCIDR string) (net.IP, error) {
	_, n, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return nil, err
	}
	ip := n.IP.To4()
	if ip == nil {
		return nil, fmt.Errorf("pod range %s is not IPv4", podCIDR)
	}
	gw := append(net.IP(nil), ip...)
	gw[3]++
	return gw, nil
}

// startInClusterControlPlane starts shared/testenv's control plane (the CRDs of deploy/crds)
// with certs in certDir, ServiceAccount admission (envtest disables it), the tokens signed
// with certs.SigningKeyFile, and gateway advertised as the kubernetes Service's endpoint.
func startInClusterControlPlane(certDir string, certs *apiServerCerts, gateway net.IP) (*testenv.Env, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := filepath.Join(root, "bin")
	if err := testenv.CheckBinaries(binDir, testenv.Binaries...); err != nil {
		return nil, err
	}
	api := &envtest.APIServer{CertDir: certDir}
	// envtest takes a serving certificate already in its directory as it is, and the CA for
	// its clients from here.
	api.SecureServing.CA = certs.CA
	api.Configure().
		Disable("disable-admission-plugins").
		Set("advertise-address", gateway.String()).
		Set("service-cluster-ip-range", testenv.ServiceCIDR).
		Set("service-account-key-file", certs.SigningKeyFile).
		Set("service-account-signing-key-file", certs.SigningKeyFile)
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
		Scheme:                clientgoscheme.Scheme,
	}
	env.ControlPlane.APIServer = api
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane from %s: %w", binDir, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return &testenv.Env{Environment: env, Config: cfg, Client: cl, Root: root}, nil
}

// Stop stops the node, undoing its changes to the host, then the control plane.
func (c *Cluster) Stop() error {
	err := c.Node.Stop()
	c.relay.stop()
	return errors.Join(err, c.Env.Stop())
}
