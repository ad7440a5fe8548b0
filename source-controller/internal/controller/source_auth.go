package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/secrets"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// secretData reads the data of a Secret of the object's namespace (credentials, keys, CAs).
func (r *SourceReconciler) secretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return secrets.Data(ctx, r.Client, namespace, name)
}

// tlsConfig reads `ca.crt`, and `tls.crt` with `tls.key`, from a Secret's data.
func tlsConfig(data map[string][]byte) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := data["ca.crt"]; len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("'ca.crt' holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	crt, key := data["tls.crt"], data["tls.key"]
	if len(crt) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fmt.Errorf("'tls.crt' and 'tls.key' are not a key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// helmAccess is how the controller reaches a HelmRepository: its index, the charts it lists
// and, for type oci, its registry.
type helmAccess struct {
	// Transport has the TLS settings of spec.certSecretRef (nil TLSClientConfig without it)
	// and the proxy of the environment (HTTPS_PROXY, NO_PROXY).
	Transport *http.Transport
	// Username and Password are the basic credentials of spec.secretRef.
	Username, Password string
}

// Client is an HTTP client over the transport, for the index download.
func (a helmAccess) Client() *http.Client {
	return &http.Client{Transport: a.Transport, Timeout: 5 * time.Minute}
}

// helmRepositoryAccess reads the credentials (spec.secretRef) and TLS settings
// (spec.certSecretRef) of a HelmRepository: the HelmRepository reconciler fetches its index
// with them, the HelmChart reconciler its charts.
func (r *SourceReconciler) helmRepositoryAccess(ctx context.Context, repo *sourcev1.HelmRepository) (helmAccess, error) {
	var a helmAccess
	if repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		if err := cloudProvider(repo.Spec.Provider); err != nil {
			return helmAccess{}, reconcile.TerminalError(err)
		}
	}
	if ref := repo.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, repo.Namespace, ref.Name)
		if err != nil {
			return helmAccess{}, err
		}
		a.Username, a.Password = string(data["username"]), string(data["password"])
		if a.Username == "" || a.Password == "" {
			return helmAccess{}, fmt.Errorf("secret '%s/%s' needs both 'username' and 'password'", repo.Namespace, ref.Name)
		}
	}
	a.Transport = http.DefaultTransport.(*http.Transport).Clone()
	if ref := repo.Spec.CertSecretRef; ref != nil {
		data, err := r.secretData(ctx, repo.Namespace, ref.Name)
		if err != nil {
			return helmAccess{}, err
		}
		cfg, err := tlsConfig(data)
		if err != nil {
			return helmAccess{}, fmt.Errorf("secret '%s/%s': %w", repo.Namespace, ref.Name, err)
		}
		a.Transport.TLSClientConfig = cfg
	}
	return a, nil
}

// secretTransport is an HTTP transport with the TLS settings of the Secret certRef (`ca.crt`,
// `tls.crt`, `tls.key`) and the proxy of the Secret proxyRef (`address`, `username`,
// `password`); without them, the defaults and the environment's proxy.
func (r *SourceReconciler) secretTransport(ctx context.Context, namespace string, certRef, proxyRef *meta.LocalObjectReference) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if certRef != nil {
		data, err := r.secretData(ctx, namespace, certRef.Name)
		if err != nil {
			return nil, err
		}
		if len(data["ca.crt"]) == 0 && len(data["tls.crt"]) == 0 && len(data["tls.key"]) == 0 {
			return nil, fmt.Errorf("secret '%s/%s' has no TLS settings: 'ca.crt', or 'tls.crt' and 'tls.key'", namespace, certRef.Name)
		}
		if t.TLSClientConfig, err = tlsConfig(data); err != nil {
			return nil, fmt.Errorf("secret '%s/%s': %w", namespace, certRef.Name, err)
		}
	}
	if proxyRef != nil {
		data, err := r.secretData(ctx, namespace, proxyRef.Name)
		if err != nil {
			return nil, err
		}
		u, err := proxyURL(data)
		if err != nil {
			return nil, fmt.Errorf("secret '%s/%s': %w", namespace, proxyRef.Name, err)
		}
		t.Proxy = http.ProxyURL(u)
	}
	return t, nil
}

// cloudProvider refuses the `provider` of a source that needs a cloud identity (aws, azure,
// gcp, github): this controller reads credentials from Secrets only.
func cloudProvider(provider string) error {
	if provider == "" || provider == "generic" {
		return nil
	}
	return fmt.Errorf("provider '%s' needs a cloud identity, which this source-controller does not obtain: "+
		"use provider generic with credentials in Secrets", provider)
}

// proxyURL is the proxy of a proxy Secret: `address`, with `username` and `password` when set.
func proxyURL(data map[string][]byte) (*url.URL, error) {
	address := string(data["address"])
	if address == "" {
		return nil, errors.New("'address' is missing")
	}
	u, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("'address' does not parse: %w", err)
	}
	user, password := data["username"], data["password"]
	if len(user) > 0 || len(password) > 0 {
		u.User = url.UserPassword(string(user), string(password))
	}
	return u, nil
}
