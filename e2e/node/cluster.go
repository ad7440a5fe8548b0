package node

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// Cluster is a control plane (shared/testenv: etcd and kube-apiserver with the CRDs) with a
// real node.
type Cluster struct {
	Env        *testenv.Env
	Kubeconfig string
	Node       *Node
}

// StartCluster starts the control plane, writes an administrator's kubeconfig into opts.StateDir
// and starts a node against it whose kube-controller-manager also runs the namespace and
// garbage-collector controllers. opts.Kubeconfig is set here; opts.BinDir defaults to the
// repository's bin/.
func StartCluster(ctx context.Context, opts Options) (*Cluster, error) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return nil, err
	}
	if opts.BinDir == "" {
		opts.BinDir = filepath.Join(env.Root, "bin")
	}
	c := &Cluster{Env: env, Kubeconfig: filepath.Join(opts.StateDir, "kubeconfig")}
	if err := env.WriteKubeconfig(c.Kubeconfig); err != nil {
		_ = env.Stop()
		return nil, err
	}
	opts.Kubeconfig = c.Kubeconfig
	plane := env.Environment.ControlPlane
	if plane.APIServer != nil && plane.APIServer.CertDir != "" {
		opts.controlPlaneDirs = append(opts.controlPlaneDirs, plane.APIServer.CertDir)
	}
	if plane.Etcd != nil && plane.Etcd.DataDir != "" {
		opts.controlPlaneDirs = append(opts.controlPlaneDirs, plane.Etcd.DataDir)
	}
	opts.ExtraControllers = append(opts.ExtraControllers, "namespace-controller", "garbage-collector-controller")
	if c.Node, err = Start(ctx, opts); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return c, nil
}

// Stop stops the node, undoing its changes to the host, then the control plane.
func (c *Cluster) Stop() error {
	return errors.Join(c.Node.Stop(), c.Env.Stop())
}
