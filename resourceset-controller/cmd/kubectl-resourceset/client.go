package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// session is what --diff needs: a client built from kubectl's flags that knows the ResourceSet
// types (generated objects are read as unstructured), and the namespace of those flags.
type session struct {
	client    client.Client
	namespace string
}

func newSession(flags *genericclioptions.ConfigFlags) (*session, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// A ResourceSet may generate hundreds of objects, each read and dry-run applied; client-go's
	// default of 5 requests per second would make that a matter of minutes.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	// One request first, so that an unreachable cluster or a bad kubeconfig is said once, not
	// once per object.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Errorf("cannot reach the cluster: %w", err)
	}
	// Namespace() honours -n, then the kubeconfig context, then "default", like kubectl.
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := rsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &session{client: c, namespace: ns}, nil
}
