package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gitauth"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/git"
)

// gitTimeout is the bound of every Git operation of one reconcile.
func gitTimeout(obj *sourcev1.GitRepository) time.Duration {
	if obj.Spec.Timeout != nil {
		return obj.Spec.Timeout.Duration
	}
	return defaultTimeout
}

// resolve asks the remote which commit the reference names (ls-remote, no clone), and returns
// how to reach it. On failure, reason is the FetchFailed reason that fits it.
func (r *GitRepositoryReconciler) resolve(ctx context.Context, obj *sourcev1.GitRepository, tmp *scratchDir) (git.Revision, git.Remote, string, error) {
	remote, reason, err := r.remote(ctx, obj, tmp)
	if err != nil {
		return git.Revision{}, git.Remote{}, reason, err
	}
	rev, err := git.Resolve(ctx, remote, obj.Spec.Reference)
	if err != nil {
		return git.Revision{}, git.Remote{}, gitReason(err), resolveFailed(ctx, obj, err)
	}
	return rev, remote, "", nil
}

// resolveFailed is the error of a reference the remote does not have, or could not tell.
func resolveFailed(ctx context.Context, obj *sourcev1.GitRepository, err error) error {
	return fmt.Errorf("failed to resolve the revision of '%s': %w", obj.Spec.URL, timeoutError(ctx, err))
}

// remote is how to reach spec.url: its credentials and proxy. On failure, reason is the
// FetchFailed reason that fits it.
func (r *GitRepositoryReconciler) remote(ctx context.Context, obj *sourcev1.GitRepository, tmp *scratchDir) (git.Remote, string, error) {
	// Before any network access: no Secret or retry can make a cloud identity appear.
	if err := cloudProvider(obj.Spec.Provider); err != nil {
		return git.Remote{}, sourcev1.AuthenticationFailedReason, reconcile.TerminalError(err)
	}
	u, err := url.Parse(obj.Spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ssh") {
		return git.Remote{}, sourcev1.URLInvalidReason,
			reconcile.TerminalError(fmt.Errorf("URL '%s' is not an http, https or ssh URL", obj.Spec.URL))
	}
	auth, err := r.auth(ctx, obj, u, tmp)
	if err != nil {
		return git.Remote{}, sourcev1.AuthenticationFailedReason, err
	}
	proxy, err := r.gitProxy(ctx, obj, u)
	if err != nil {
		return git.Remote{}, sourcev1.AuthenticationFailedReason, err
	}
	return git.Remote{URL: obj.Spec.URL, Auth: auth, Proxy: proxy}, "", nil
}

// auth reads the credentials of spec.secretRef; SSH's known_hosts file goes into tmp.
func (r *GitRepositoryReconciler) auth(ctx context.Context, obj *sourcev1.GitRepository, u *url.URL, tmp *scratchDir) (*gitauth.Auth, error) {
	var data map[string][]byte
	if ref := obj.Spec.SecretRef; ref != nil {
		var err error
		if data, err = r.secretData(ctx, obj.Namespace, ref.Name); err != nil {
			return nil, err
		}
	}
	dir := ""
	if u.Scheme == "ssh" {
		var err error
		if dir, err = tmp.path(); err != nil {
			return nil, err
		}
	}
	return gitauth.AuthFromSecret(u, data, dir)
}

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

// gitReason tells authentication failures and clones over --git-max-clone-size from other Git
// failures.
func gitReason(err error) string {
	if gitauth.IsAuthError(err) {
		return sourcev1.AuthenticationFailedReason
	}
	if errors.Is(err, git.ErrCloneTooLarge) {
		return sourcev1.SourceTooLargeReason
	}
	return sourcev1.GitOperationFailedReason
}

// timeoutError says so when the Git operation ran out of spec.timeout.
func timeoutError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out (spec.timeout): %w", err)
	}
	return err
}
