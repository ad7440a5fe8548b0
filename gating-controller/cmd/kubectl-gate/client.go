package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// session is what every command needs: the REST config and namespace resolved from kubectl's
// flags, and a client that knows the Gate types.
type session struct {
	config    *rest.Config
	namespace string
	client    client.WithWatch
}

func newSession(flags *genericclioptions.ConfigFlags) (*session, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// Namespace() honours -n, then the kubeconfig context, then "default", like kubectl.
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: gateScheme()})
	if err != nil {
		return nil, err
	}
	return &session{config: cfg, namespace: ns, client: c}, nil
}

// getGate reads one Gate of the session namespace.
func (s *session) getGate(ctx context.Context, name string) (*gatingv1alpha1.Gate, error) {
	gate := &gatingv1alpha1.Gate{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, gate)
	return gate, s.explain(err, name)
}

// explain turns the API's "gates.gating.toolkit.fluxcd.io "x" not found" into a message that
// names the namespace too, since a wrong -n is the usual cause.
func (s *session) explain(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("gate %q not found in namespace %q", name, s.namespace)
	}
	return err
}

// gateScheme knows the Gate types.
func gateScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := gatingv1alpha1.AddToScheme(scheme); err != nil {
		panic(err) // the types are part of the binary
	}
	return scheme
}
