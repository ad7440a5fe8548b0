package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gitauth"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/git"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

const defaultGitTimeout = 60 * time.Second

// reconcileSource resolves the reference on the remote and, when it is not the stored
// revision, checks it out into dir. changed is false for a no-op: the artifact is up to date.
func (r *GitRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.GitRepository, tmp *scratchDir) (git.Commit, bool, error) {
	u, err := url.Parse(obj.Spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ssh") {
		return git.Commit{}, false, r.fetchFailed(obj, sourcev1.URLInvalidReason,
			reconcile.TerminalError(fmt.Errorf("URL '%s' is not an http, https or ssh URL", obj.Spec.URL)))
	}
	auth, err := r.auth(ctx, obj, u, tmp)
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	timeout := defaultGitTimeout
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	gitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	rev, err := git.Resolve(gitCtx, obj.Spec.URL, obj.Spec.Reference, auth)
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, gitReason(err), fmt.Errorf("failed to resolve the revision of '%s': %w", obj.Spec.URL, timeoutError(gitCtx, err)))
	}
	if art := obj.Status.Artifact; art != nil && art.Revision == rev.String() && ignoreEqual(obj.Spec.Ignore, obj.Status.ObservedIgnore) {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		log.FromContext(ctx).Info(fmt.Sprintf("artifact up-to-date with remote revision: '%s'", rev))
		return git.Commit{}, false, nil
	}
	msg := fmt.Sprintf("new upstream revision '%s'", rev)
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "%s", msg)
	conditions.MarkReconciling(obj, meta.ProgressingReason, "building artifact: %s", msg)

	dir, err := tmp.path()
	if err != nil {
		return git.Commit{}, false, err
	}
	commit, err := git.Checkout(gitCtx, dir+"/src", obj.Spec.URL, rev, auth, r.MaxCloneSize)
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, gitReason(err), fmt.Errorf("failed to checkout '%s' of '%s': %w", rev, obj.Spec.URL, timeoutError(gitCtx, err)))
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	return commit, true, nil
}

// reconcileArtifact archives the checkout and makes it the served artifact.
func (r *GitRepositoryReconciler) reconcileArtifact(obj *sourcev1.GitRepository, commit git.Commit, dir string) error {
	src := dir + "/src"
	art := r.Storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, commit.Revision.String(), commit.Revision.Hash+".tar.gz")
	filter, err := storage.IgnoreFilter(src, obj.Spec.Ignore)
	if err != nil {
		return r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("reading the ignore rules: %w", err))
	}
	if err := r.Storage.Archive(&art, src, filter); err != nil {
		reason := sourcev1.ArchiveOperationFailedReason
		if errors.Is(err, storage.ErrArtifactTooLarge) {
			reason = sourcev1.ArtifactTooLargeReason
		}
		return r.storageFailed(obj, reason, fmt.Errorf("archiving revision '%s': %w", commit.Revision, err))
	}
	if _, err := r.storeArtifact(obj, art, "latest.tar.gz", sourcev1.NewArtifactReason, fmt.Sprintf("stored artifact for commit '%s'", commit.Subject)); err != nil {
		return err
	}
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	return nil
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
