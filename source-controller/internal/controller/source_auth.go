package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/secrets"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// secretData reads the data of a Secret of the object's namespace (credentials, keys, CAs).
func (r *SourceReconciler) secretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return secrets.Data(ctx, r.Client, namespace, name)
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

// helmCredentials are the basic credentials of a HelmRepository's spec.secretRef: `username` and
// `password`, or, for type oci, the entry of a docker-config Secret for the repository's URL.
func helmCredentials(repo *sourcev1.HelmRepository, data map[string][]byte) (username, password string, err error) {
	_, dockerConfig := data[corev1.DockerConfigJsonKey]
	_, dockerCfg := data[corev1.DockerConfigKey]
	if repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI && (dockerConfig || dockerCfg) {
		auth, err := secrets.RegistryAuth(data, repo.Spec.URL)
		if err == nil {
			var cfg *authn.AuthConfig
			if cfg, err = auth.Authorization(); err == nil {
				return cfg.Username, cfg.Password, nil
			}
		}
		return "", "", fmt.Errorf("secret '%s/%s': %w", repo.Namespace, repo.Spec.SecretRef.Name, err)
	}
	username, password = string(data["username"]), string(data["password"])
	if username == "" || password == "" {
		return "", "", fmt.Errorf("secret '%s/%s' needs both 'username' and 'password'", repo.Namespace, repo.Spec.SecretRef.Name)
	}
	return username, password, nil
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
		if a.Username, a.Password, err = helmCredentials(repo, data); err != nil {
			return helmAccess{}, err
		}
	}
	ref := repo.Spec.CertSecretRef
	if ref == nil {
		a.Transport = http.DefaultTransport.(*http.Transport).Clone()
		return a, nil
	}
	data, err := r.secretData(ctx, repo.Namespace, ref.Name)
	if err != nil {
		return helmAccess{}, err
	}
	if a.Transport, err = secrets.Transport(ctx, repo.Namespace, ref.Name, data); err != nil {
		return helmAccess{}, err
	}
	return a, nil
}

// secretTransport is an HTTP transport with the TLS settings of the Secret certRef (`ca.crt`,
// `tls.crt`, `tls.key`) and the proxy of the Secret proxyRef (`address`, `username`,
// `password`); without them, the defaults and the environment's proxy.
func (r *SourceReconciler) secretTransport(ctx context.Context, namespace string, certRef, proxyRef *meta.LocalObjectReference) (*http.Transport, error) {
	var t *http.Transport
	if certRef == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
	} else {
		data, err := r.secretData(ctx, namespace, certRef.Name)
		if err != nil {
			return nil, err
		}
		if t, err = secrets.Transport(ctx, namespace, certRef.Name, data); err != nil {
			return nil, err
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
