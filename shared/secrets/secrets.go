// Package secrets reads the Secrets that objects reference (credentials, TLS material, signing
// keys) and turns them into what clients take, the same way in every controller, with errors
// that name the Secret and never hold its data:
//
//   - Data reads a Secret. Controllers pass their manager's client: bootstrap.NewManager makes
//     it read Secrets from the API server, not from a cache, so no controller holds every
//     Secret of the cluster in memory and a replaced Secret is used at the next reconcile.
//     Get and List are the same reads for callers that need the whole Secret (its type) or
//     the API's own errors.
//   - Registries are the registry credentials of docker-config Secrets, as a
//     go-containerregistry keychain (which key forms match which repository: Registries).
//   - TLSConfig builds the TLS settings of a certSecretRef. Its rule, everywhere: `ca.crt` is
//     added to the system's roots, it does not replace them.
//   - Transport is an HTTP transport with those TLS settings, the one way a Secret becomes a
//     transport.
package secrets

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Data returns the data of the Secret namespace/name. A missing Secret is an error that says so
// (apierrors.IsNotFound still tells it): it may be created after the object that refers to it,
// so callers retry it like any other failure.
func Data(ctx context.Context, reader client.Reader, namespace, name string) (map[string][]byte, error) {
	secret, err := Get(ctx, reader, client.ObjectKey{Namespace: namespace, Name: name})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &notFoundError{namespace: namespace, name: name, err: err}
		}
		return nil, fmt.Errorf("reading Secret '%s/%s': %w", namespace, name, err)
	}
	return secret.Data, nil
}

// Get returns the Secret at key, with the API's error as it is, for callers that report a
// missing or forbidden Secret in their own words.
func Get(ctx context.Context, reader client.Reader, key client.ObjectKey) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		return nil, err
	}
	return secret, nil
}

// List returns the Secrets of namespace that match opts (a label selector), with the API's
// error as it is.
func List(ctx context.Context, reader client.Reader, namespace string, opts ...client.ListOption) ([]corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := reader.List(ctx, list, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// notFoundError is a missing Secret, in the words users see, wrapping the API's NotFound.
type notFoundError struct {
	namespace, name string
	err             error
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("Secret '%s/%s' not found", e.namespace, e.name)
}
func (e *notFoundError) Unwrap() error { return e.err }
