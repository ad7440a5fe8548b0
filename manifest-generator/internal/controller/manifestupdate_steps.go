package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

// target reads the ManifestGeneration and its GitRepository; waitMsg says which is missing.
func (r *ManifestUpdateReconciler) target(ctx context.Context, obj *generatorv1.ManifestUpdate) (update.Target, string, error) {
	var t update.Target
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
	t = update.Target{RepoName: ref.Name, Path: path, Namespace: gen.Namespace, Env: env, Timeout: gen.GetTimeout(defaultTimeout),
		Egress: gen.Spec.Egress}

	repo := newSource(generatorv1.GitRepositoryKind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return t, fmt.Sprintf("GitRepository '%s/%s' not found", obj.Namespace, ref.Name), nil
		}
		return t, "", err
	}
	t.URL, _, _ = unstructured.NestedString(repo.Object, "spec", "url")
	t.SecretName, _, _ = unstructured.NestedString(repo.Object, "spec", "secretRef", "name")
	t.Base, _, _ = unstructured.NestedString(repo.Object, "spec", "ref", "branch")
	t.Branch = obj.GetBranch()
	if t.Branch == "" {
		t.Branch = t.Base
	}
	if obj.Spec.PullRequest != nil {
		// The change is proposed: its own branch, started from the branch it would be pushed to.
		t.Base, t.Branch, t.FromBase = t.Branch, pullRequestBranch(obj), true
	}
	if t.URL == "" {
		return t, "", reconcile.TerminalError(fmt.Errorf("GitRepository '%s/%s' has no spec.url", obj.Namespace, ref.Name))
	}
	if t.Branch == "" {
		return t, "", reconcile.TerminalError(fmt.Errorf("GitRepository '%s/%s' does not check out a branch: set spec.git.Branch", obj.Namespace, ref.Name))
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

// requestSourceReconcile annotates the GitRepository with reconcile.fluxcd.io/requestedAt so
// that it fetches the new commit now.
func (r *ManifestUpdateReconciler) requestSourceReconcile(ctx context.Context, namespace, name string) error {
	repo := newSource(generatorv1.GitRepositoryKind)
	repo.SetNamespace(namespace)
	repo.SetName(name)
	body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, r.now().Format(time.RFC3339Nano))
	return r.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(body)))
}
