package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gitauth"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/forge"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// forgeInputs exports the branches, tags, open pull or merge requests or environments of the
// repository at spec.url: listed by the forge's API (or ls-remote for GitBranch and GitTag),
// chosen by spec.filter, with spec.skip.labels freezing requests at their last exported input.
func (r *ResourceSetInputProviderReconciler) forgeInputs(ctx context.Context, obj *rsv1.ResourceSetInputProvider, kind forge.Kind) ([]map[string]any, error) {
	lister, cleanup, err := r.lister(ctx, obj)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	items, err := lister.List(ctx, kind)
	if err != nil {
		return nil, err
	}
	if items, err = forge.Select(kind, items, forge.FilterOf(obj)); err != nil {
		return nil, err
	}
	if kind == forge.Requests && obj.Spec.Skip != nil {
		last, err := inputs.FromAPI(obj.Status.ExportedInputs)
		if err != nil {
			return nil, fmt.Errorf("status.exportedInputs: %w", err)
		}
		items = forge.Freeze(items, obj.Spec.Skip.Labels, last)
	}
	return forge.Inputs(items), nil
}

// lister is the Lister of the provider's type, with the credentials of spec.secretRef and the
// CA of spec.certSecretRef. cleanup removes what the credentials needed on disk.
func (r *ResourceSetInputProviderReconciler) lister(ctx context.Context, obj *rsv1.ResourceSetInputProvider) (forge.Lister, func(), error) {
	noop := func() {}
	creds, err := r.credentials(ctx, obj)
	if err != nil {
		return nil, noop, err
	}
	data, tlsConfig, caData := creds.Secret, creds.TLS, creds.CA

	if t := obj.Spec.Type; t == rsv1.InputProviderGitBranch || t == rsv1.InputProviderGitTag {
		return r.gitRemote(obj, data, caData)
	}
	opts := forge.Options{URL: obj.Spec.URL, HTTPClient: r.forgeHTTPClient(tlsConfig)}
	var l forge.Lister
	switch {
	case strings.HasPrefix(obj.Spec.Type, "Gitea"):
		opts.Token = apiToken(data)
		l, err = forge.NewGitea(opts)
	case strings.HasPrefix(obj.Spec.Type, "GitHub"):
		if opts.Token, err = forge.GitHubToken(ctx, data, obj.Spec.URL, opts.HTTPClient); err != nil {
			return nil, noop, err
		}
		l, err = forge.NewGitHub(opts)
	case strings.HasPrefix(obj.Spec.Type, "GitLab"):
		opts.Token = apiToken(data)
		l, err = forge.NewGitLab(opts)
	default:
		return nil, noop, reconcile.TerminalError(fmt.Errorf("provider type %s is not served yet", obj.Spec.Type))
	}
	return l, noop, err
}

// forgeHTTPClient reaches a forge's API: plain http:// is allowed when spec.url says so (as for
// a GitRepository), and only the addresses r.Addresses allows (--external-service-allowed-cidrs),
// as for an ExternalService.
func (r *ResourceSetInputProviderReconciler) forgeHTTPClient(tlsConfig *tls.Config) *http.Client {
	addresses := r.Addresses
	if addresses == nil {
		addresses = &inputs.AddressPolicy{}
	}
	return inputs.HTTPClient(tlsConfig, true, 0, addresses)
}

// apiToken is the token of a forge's API in a Secret: `password` (with `username`, as
// flux-operator's and Flux's Git Secrets hold a personal access token), else `token`.
func apiToken(data map[string][]byte) string {
	if p := data["password"]; len(p) > 0 {
		return string(p)
	}
	return string(data["token"])
}

// gitRemote is the ls-remote Lister of GitBranch and GitTag, with a GitRepository's Secret keys
// (username and password, bearerToken, or identity and known_hosts for ssh://) and the CA of
// spec.certSecretRef.
func (r *ResourceSetInputProviderReconciler) gitRemote(obj *rsv1.ResourceSetInputProvider, data map[string][]byte, caData []byte) (forge.Lister, func(), error) {
	noop := func() {}
	u, err := url.Parse(obj.Spec.URL)
	if err != nil {
		return nil, noop, reconcile.TerminalError(&inputs.InvalidURLError{URL: obj.Spec.URL, Reason: err.Error()})
	}
	if len(caData) > 0 {
		merged := make(map[string][]byte, len(data)+1)
		for k, v := range data {
			merged[k] = v
		}
		merged["ca.crt"] = caData
		data = merged
	}
	dir, err := os.MkdirTemp("", "rsip-git-")
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	auth, err := gitauth.AuthFromSecret(u, data, dir)
	if err != nil {
		cleanup()
		if obj.Spec.SecretRef == nil {
			return nil, noop, reconcile.TerminalError(fmt.Errorf("spec.secretRef: %w", err))
		}
		return nil, noop, reconcile.TerminalError(fmt.Errorf("secret '%s/%s': %w", obj.Namespace, obj.Spec.SecretRef.Name, err))
	}
	return forge.NewGitRemote(obj.Spec.URL, auth), cleanup, nil
}
