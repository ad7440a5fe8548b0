package storage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

// URLKeysSecretKey is the key of the URL keys' Secret (--artifact-url-keys-secret-ref) that
// holds them, in the format of --artifact-url-keys-file.
const URLKeysSecretKey = "keys"

// The replicas read the keys' Secret, and the first one creates it.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=sluice-system

// URLKeysFromSecret returns the URL keys of the Secret name in namespace, creating it with a
// new random key when it does not exist yet, so that every replica signs and verifies with the
// same keys and a failover changes no URL. Replicas starting together create it once: the
// others find it created (AlreadyExists) and read it. Keys rotate as with the file: add a new
// first line, restart the replicas, remove the old line once the old URLs are gone.
func URLKeysFromSecret(ctx context.Context, reader client.Reader, writer client.Writer, namespace, name string) ([][]byte, error) {
	read := func() ([][]byte, error) {
		s, err := secrets.Get(ctx, reader, client.ObjectKey{Namespace: namespace, Name: name})
		if err != nil {
			return nil, err
		}
		keys, err := parseURLKeys(s.Data[URLKeysSecretKey])
		if err != nil {
			return nil, fmt.Errorf("artifact URL keys of secret '%s/%s' (key '%s'): %w", namespace, name, URLKeysSecretKey, err)
		}
		return keys, nil
	}
	keys, err := read()
	if !apierrors.IsNotFound(err) {
		return keys, err
	}
	raw := make([]byte, MinURLKeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string][]byte{URLKeysSecretKey: []byte(base64.RawURLEncoding.EncodeToString(raw) + "\n")},
	}
	if err := writer.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the artifact URL keys' secret '%s/%s': %w", namespace, name, err)
	}
	return read()
}
