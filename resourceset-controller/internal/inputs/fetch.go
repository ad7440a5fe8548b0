package inputs

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sluice-gitops/sluice/shared/secrets"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Credentials are what a provider's Secrets hold, read once per reconcile by the controller.
type Credentials struct {
	// Secret is the data of spec.secretRef; nil without one.
	Secret map[string][]byte
	// TLS is the client TLS of spec.certSecretRef, and CA its ca.crt; nil without one.
	TLS *tls.Config
	CA  []byte
}

// FetchOCIArtifactTags lists the tags of the provider's spec.url with the credentials of its
// spec.secretRef (a docker-config Secret) and the TLS settings of spec.certSecretRef.
func FetchOCIArtifactTags(ctx context.Context, obj *rsv1.ResourceSetInputProvider, creds Credentials) ([]map[string]any, error) {
	var opts []remote.Option
	if ref := obj.Spec.SecretRef; ref != nil {
		auth, err := secrets.RegistryAuth(creds.Secret, strings.TrimPrefix(obj.Spec.URL, OCIPrefix))
		if err != nil {
			return nil, fmt.Errorf("secret '%s/%s': %w", obj.Namespace, ref.Name, err)
		}
		opts = append(opts, remote.WithAuth(auth))
	}
	if creds.TLS != nil {
		// For a registry, plain HTTP is decided by the reference (spec.insecure becomes
		// name.Insecure in OCIArtifactTags), so the transport does not refuse it here.
		opts = append(opts, remote.WithTransport(HTTPClient(creds.TLS, true, 0, nil).Transport))
	}
	f := Filter{Limit: obj.GetLimit()}
	if obj.Spec.Filter != nil {
		f.SemVer, f.IncludeTag, f.ExcludeTag = obj.Spec.Filter.SemVer, obj.Spec.Filter.IncludeTag, obj.Spec.Filter.ExcludeTag
	}
	return OCIArtifactTags(ctx, obj.Spec.URL, f, obj.Spec.Insecure, opts...)
}

// FetchExternalService GETs the provider's spec.url with the token or basic credentials of its
// spec.secretRef and the CA of spec.certSecretRef (http:// only with spec.insecure), from the
// addresses allows, and keeps the first spec.filter.limit inputs of the answer when a filter is
// given.
func FetchExternalService(ctx context.Context, obj *rsv1.ResourceSetInputProvider, creds Credentials, addresses *AddressPolicy) ([]map[string]any, error) {
	var auth Auth
	if ref := obj.Spec.SecretRef; ref != nil {
		data := creds.Secret
		auth = Auth{Token: string(data["token"]), Username: string(data["username"]), Password: string(data["password"])}
		if auth.Token == "" && auth.Username == "" {
			return nil, fmt.Errorf("secret '%s/%s' has neither 'token' nor 'username' and 'password'", obj.Namespace, ref.Name)
		}
	}
	if addresses == nil {
		addresses = &AddressPolicy{}
	}
	list, err := ExternalService(ctx, obj.Spec.URL, HTTPClient(creds.TLS, obj.Spec.Insecure, 0, addresses), auth, DefaultMaxResponseBytes)
	if err != nil {
		return nil, err
	}
	// With a spec.filter, its limit keeps the first inputs of the answer; without one the whole
	// answer is exported (it is bounded by its size).
	if f := obj.Spec.Filter; f != nil && f.Limit > 0 && len(list) > f.Limit {
		list = list[:f.Limit]
	}
	return list, nil
}
