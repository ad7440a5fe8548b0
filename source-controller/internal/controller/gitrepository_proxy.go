package controller

import (
	"context"
	"fmt"
	"net/url"

	"github.com/go-git/go-git/v5/plumbing/transport"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// gitProxy reads spec.proxySecretRef (`address`, `username`, `password`) for the remote u. As
// in Flux, HTTP(S) remotes go through an HTTP(S) or SOCKS5 proxy; an SSH connection can only be
// carried by SOCKS5 (go-git dials it through golang.org/x/net/proxy), so an HTTP proxy for an
// ssh URL is refused here rather than failing at the dial. Without the field: the environment's
// proxy (HTTPS_PROXY, NO_PROXY) for HTTP(S).
func (r *GitRepositoryReconciler) gitProxy(ctx context.Context, obj *sourcev1.GitRepository, u *url.URL) (transport.ProxyOptions, error) {
	ref := obj.Spec.ProxySecretRef
	if ref == nil {
		return transport.ProxyOptions{}, nil
	}
	data, err := r.secretData(ctx, obj.Namespace, ref.Name)
	if err != nil {
		return transport.ProxyOptions{}, err
	}
	p, err := proxyURL(data)
	if err != nil {
		return transport.ProxyOptions{}, fmt.Errorf("secret '%s/%s': %w", obj.Namespace, ref.Name, err)
	}
	switch p.Scheme {
	case "http", "https", "socks5":
	default:
		return transport.ProxyOptions{}, fmt.Errorf("secret '%s/%s': proxy 'address' must be an http, https or socks5 URL", obj.Namespace, ref.Name)
	}
	if u.Scheme == "ssh" && p.Scheme != "socks5" {
		return transport.ProxyOptions{}, fmt.Errorf("secret '%s/%s': an ssh URL can only go through a socks5 proxy, not %s",
			obj.Namespace, ref.Name, p.Scheme)
	}
	opts := transport.ProxyOptions{Username: p.User.Username()}
	opts.Password, _ = p.User.Password()
	p.User = nil
	opts.URL = p.String()
	return opts, nil
}
