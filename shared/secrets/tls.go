package secrets

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	fluxsecrets "github.com/fluxcd/pkg/runtime/secrets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSConfig builds the TLS settings of a certSecretRef from the data of the Secret
// namespace/name: `ca.crt` is trusted in addition to the system's roots (as Flux does: a
// private CA for one server does not stop the public ones from verifying), and `tls.crt` with
// `tls.key` is the client certificate. The Secret must hold a CA, a key pair, or both. TLS 1.2
// is the oldest version accepted.
//
// The parsing is fluxcd/pkg/runtime/secrets', so Flux's legacy names (`caFile`, `certFile`,
// `keyFile`) are read too.
func TLSConfig(ctx context.Context, namespace, name string, data map[string][]byte) (*tls.Config, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
	cfg, err := fluxsecrets.TLSConfigFromSecret(ctx, secret, fluxsecrets.WithSystemCertPool())
	var named *fluxsecrets.SecretTLSValidationError
	if errors.As(err, &named) {
		return nil, err // it names the Secret already
	}
	if err != nil {
		return nil, fmt.Errorf("secret '%s/%s': %w", namespace, name, err)
	}
	cfg.MinVersion = tls.VersionTLS12
	return cfg, nil
}

// Transport is an HTTP transport with the TLS settings of the certSecretRef namespace/name
// (TLSConfig), and otherwise http.DefaultTransport's: the environment's proxy, its timeouts and
// connection pool sizes.
func Transport(ctx context.Context, namespace, name string, data map[string][]byte) (*http.Transport, error) {
	cfg, err := TLSConfig(ctx, namespace, name, data)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	return t, nil
}
