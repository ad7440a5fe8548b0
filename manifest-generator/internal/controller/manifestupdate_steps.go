package controller

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/secrets"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
)

// updateTarget is where a ManifestUpdate writes: the repository and branch of the
// ManifestGeneration's GitRepository, and the generation's target path and command settings.
type updateTarget struct {
	repoName string
	url      string
	branch   string
	// base is the source's branch, where a new push branch starts.
	base       string
	secretName string
	// path is the generation's spec.path, cleaned and relative to the repository root.
	path string
	// namespace is the namespace of objects without one (the generation's).
	namespace string
	env       map[string]string
	timeout   time.Duration
}

// target reads the ManifestGeneration and its GitRepository; waitMsg says which is missing.
func (r *ManifestUpdateReconciler) target(ctx context.Context, obj *generatorv1.ManifestUpdate) (updateTarget, string, error) {
	var t updateTarget
	gen := &generatorv1.ManifestGeneration{}
	key := client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.GenerationRef.Name}
	if err := r.Get(ctx, key, gen); err != nil {
		if apierrors.IsNotFound(err) {
			return t, fmt.Sprintf("ManifestGeneration '%s/%s' not found", key.Namespace, key.Name), nil
		}
		return t, "", err
	}
	ref := gen.Spec.SourceRef
	if ref.Kind != generatorv1.GitRepositoryKind {
		return t, "", reconcile.TerminalError(fmt.Errorf("the source of ManifestGeneration '%s/%s' is a %s: only a GitRepository can be written to",
			key.Namespace, key.Name, ref.Kind))
	}
	path, err := cleanTargetPath(gen.Spec.Path)
	if err != nil {
		return t, "", reconcile.TerminalError(fmt.Errorf("ManifestGeneration '%s/%s': %w", key.Namespace, key.Name, err))
	}
	env := make(map[string]string, len(gen.Spec.Env))
	for _, v := range gen.Spec.Env {
		if fluxyaml.IsReservedEnv(v.Name) {
			return t, "", reconcile.TerminalError(fmt.Errorf("ManifestGeneration '%s/%s': spec.env: %s is reserved", key.Namespace, key.Name, v.Name))
		}
		env[v.Name] = v.Value
	}
	defaultTimeout := r.DefaultTimeout
	if defaultTimeout <= 0 {
		defaultTimeout = fluxyaml.DefaultTimeout
	}
	t = updateTarget{repoName: ref.Name, path: path, namespace: gen.Namespace, env: env, timeout: gen.GetTimeout(defaultTimeout)}

	repo := newSource(generatorv1.GitRepositoryKind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return t, fmt.Sprintf("GitRepository '%s/%s' not found", obj.Namespace, ref.Name), nil
		}
		return t, "", err
	}
	t.url, _, _ = unstructured.NestedString(repo.Object, "spec", "url")
	t.secretName, _, _ = unstructured.NestedString(repo.Object, "spec", "secretRef", "name")
	t.base, _, _ = unstructured.NestedString(repo.Object, "spec", "ref", "branch")
	t.branch = obj.GetBranch()
	if t.branch == "" {
		t.branch = t.base
	}
	if t.url == "" {
		return t, "", reconcile.TerminalError(fmt.Errorf("GitRepository '%s/%s' has no spec.url", obj.Namespace, ref.Name))
	}
	if t.branch == "" {
		return t, "", reconcile.TerminalError(fmt.Errorf("GitRepository '%s/%s' does not check out a branch: set spec.git.branch", obj.Namespace, ref.Name))
	}
	return t, "", nil
}

// cleanTargetPath cleans spec.path (default ./) into a path relative to the repository root,
// as the builder does.
func cleanTargetPath(p string) (string, error) {
	if p == "" {
		p = generatorv1.DefaultPath
	}
	clean := filepath.Clean(strings.TrimLeft(p, "/"))
	if clean != "." && !filepath.IsLocal(clean) {
		return "", fmt.Errorf("spec.path '%s' is outside the repository", p)
	}
	return clean, nil
}

// pushOptions are the gitwrite options of the update: credentials of the GitRepository's
// secretRef, the signing key, the author and the message msg. cleanup removes the credential
// files.
func (r *ManifestUpdateReconciler) pushOptions(ctx context.Context, obj *generatorv1.ManifestUpdate, t updateTarget, msg string) (gitwrite.Options, func(), error) {
	author := obj.GetAuthor()
	opts := gitwrite.Options{URL: t.url, Branch: t.branch, BaseBranch: t.base, Author: gitwrite.Author{Name: author.Name, Email: author.Email},
		Dir: r.Dir, Message: msg}

	u, err := url.Parse(t.url)
	if err != nil {
		return opts, func() {}, reconcile.TerminalError(fmt.Errorf("the URL of GitRepository '%s/%s' is invalid: %s", obj.Namespace, t.repoName, url.PathEscape(t.url)))
	}
	var data map[string][]byte
	if t.secretName != "" {
		if data, err = r.secretData(ctx, obj.Namespace, t.secretName); err != nil {
			return opts, func() {}, err
		}
	}
	dir, cleanup, err := r.scratchDir("auth-")
	if err != nil {
		return opts, cleanup, err
	}
	if opts.Auth, err = gitauth.AuthFromSecret(u, data, dir); err != nil {
		cleanup()
		return opts, func() {}, fmt.Errorf("credentials of GitRepository '%s/%s': %w", obj.Namespace, t.repoName, err)
	}
	if key := obj.GetSigningKey(); key != nil {
		data, err := r.secretData(ctx, obj.Namespace, key.SecretRef.Name)
		if err != nil {
			cleanup()
			return opts, func() {}, err
		}
		pass := string(data[generatorv1.SigningKeyPassphraseKey])
		switch {
		case len(data[generatorv1.SigningKeySSHKey]) > 0:
			opts.Signer, err = gitwrite.SSHSigner(data[generatorv1.SigningKeySSHKey], pass)
		case len(data[generatorv1.SigningKeyGPGKey]) > 0:
			opts.Signer, err = gitwrite.GPGSigner(data[generatorv1.SigningKeyGPGKey], pass)
		default:
			err = fmt.Errorf("holds neither '%s' nor '%s'", generatorv1.SigningKeySSHKey, generatorv1.SigningKeyGPGKey)
		}
		if err != nil {
			cleanup()
			return opts, func() {}, reconcile.TerminalError(fmt.Errorf("signing key Secret '%s/%s': %w", obj.Namespace, key.SecretRef.Name, err))
		}
	}
	return opts, cleanup, nil
}

// secretData reads a Secret with the manager's client, which reads Secrets from the API server
// (bootstrap.ClientOptions).
func (r *ManifestUpdateReconciler) secretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return secrets.Data(ctx, r.Client, namespace, name)
}

// requestSourceReconcile annotates the GitRepository with reconcile.fluxcd.io/requestedAt so
// that it fetches the new commit now.
func (r *ManifestUpdateReconciler) requestSourceReconcile(ctx context.Context, namespace, name string) error {
	repo := newSource(generatorv1.GitRepositoryKind)
	repo.SetNamespace(namespace)
	repo.SetName(name)
	body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, r.now().Format(time.RFC3339Nano))
	return r.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(body)))
}
