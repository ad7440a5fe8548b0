package update

import (
	"context"
	"fmt"
	"net/url"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/secrets"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
)

// pushOptions are the gitwrite options of req: credentials of the GitRepository's secretRef,
// the signing key, the author and the message. cleanup removes the credential files.
func (u *Updater) pushOptions(ctx context.Context, req Request) (gitwrite.Options, func(), error) {
	obj, t := req.Update, req.Target
	author := obj.GetAuthor()
	opts := gitwrite.Options{URL: t.URL, Branch: t.Branch, BaseBranch: t.Base, FromBase: t.FromBase, Author: gitwrite.Author{Name: author.Name, Email: author.Email},
		Dir: u.Dir, Message: req.Message}

	parsed, err := url.Parse(t.URL)
	if err != nil {
		return opts, func() {}, reconcile.TerminalError(fmt.Errorf("the URL of GitRepository '%s/%s' is invalid: %s", obj.Namespace, t.RepoName, url.PathEscape(t.URL)))
	}
	var data map[string][]byte
	if t.SecretName != "" {
		if data, err = secrets.Data(ctx, u.Secrets, obj.Namespace, t.SecretName); err != nil {
			return opts, func() {}, err
		}
	}
	dir, cleanup, err := u.scratchDir("auth-")
	if err != nil {
		return opts, cleanup, err
	}
	if opts.Auth, err = gitauth.AuthFromSecret(parsed, data, dir); err != nil {
		cleanup()
		return opts, func() {}, fmt.Errorf("credentials of GitRepository '%s/%s': %w", obj.Namespace, t.RepoName, err)
	}
	if key := obj.GetSigningKey(); key != nil {
		if opts.Signer, err = u.signer(ctx, obj.Namespace, key.SecretRef.Name); err != nil {
			cleanup()
			return opts, func() {}, err
		}
	}
	return opts, cleanup, nil
}

// signer signs with the SSH or GPG key of the Secret name.
func (u *Updater) signer(ctx context.Context, namespace, name string) (*gitwrite.Signer, error) {
	data, err := secrets.Data(ctx, u.Secrets, namespace, name)
	if err != nil {
		return nil, err
	}
	pass := string(data[generatorv1.SigningKeyPassphraseKey])
	var signer *gitwrite.Signer
	switch {
	case len(data[generatorv1.SigningKeySSHKey]) > 0:
		signer, err = gitwrite.SSHSigner(data[generatorv1.SigningKeySSHKey], pass)
	case len(data[generatorv1.SigningKeyGPGKey]) > 0:
		signer, err = gitwrite.GPGSigner(data[generatorv1.SigningKeyGPGKey], pass)
	default:
		err = fmt.Errorf("holds neither '%s' nor '%s'", generatorv1.SigningKeySSHKey, generatorv1.SigningKeyGPGKey)
	}
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("signing key Secret '%s/%s': %w", namespace, name, err))
	}
	return signer, nil
}
