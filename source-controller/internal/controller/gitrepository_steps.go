package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/status"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/git"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

const defaultGitTimeout = 60 * time.Second

// reconcileSource resolves the reference on the remote and, when it is not the stored
// revision, fetches it. changed is false for a no-op: the artifact is up to date.
func (r *GitRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.GitRepository, tmp *scratchDir, includes []*meta.Artifact) (git.Commit, bool, error) {
	gitCtx, cancel := context.WithTimeout(ctx, gitTimeout(obj))
	defer cancel()
	rev, remote, reason, err := r.resolve(gitCtx, obj, tmp)
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, reason, err)
	}
	art := obj.Status.Artifact
	if art != nil && art.Revision == rev.String() && contentUnchanged(obj) && includesUnchanged(obj, includes) && verificationUnchanged(obj) {
		clearVerification(obj)
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		log.FromContext(ctx).Info(fmt.Sprintf("artifact up-to-date with remote revision: '%s'", rev))
		return git.Commit{}, false, nil
	}
	outdated(obj, rev, includes)

	dir := func() (string, error) {
		d, err := tmp.path()
		return d + "/src", err
	}
	commit, err := git.Checkout(gitCtx, dir, remote, rev, r.MaxCloneSize, obj.Spec.RecurseSubmodules)
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, gitReason(err), fmt.Errorf("failed to checkout '%s' of '%s': %w", rev, obj.Spec.URL, timeoutError(gitCtx, err)))
	}
	if err := checkSparse(commit.Files, sparseDirs(obj.Spec.SparseCheckout)); err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, sourcev1.GitOperationFailedReason, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	if err := r.verifyCommit(ctx, obj, commit); err != nil {
		return git.Commit{}, false, err
	}
	return commit, true, nil
}

// outdated says why the artifact is built: ArtifactOutdated for a new revision or changed
// includes (as Flux); a changed spec that shapes the content needs no condition: the preamble
// said Reconciling for its new generation.
func outdated(obj *sourcev1.GitRepository, rev git.Revision, includes []*meta.Artifact) {
	art := obj.Status.Artifact
	var reason, msg string
	switch {
	case art == nil || art.Revision != rev.String():
		reason, msg = sourcev1.NewRevisionReason, fmt.Sprintf("new upstream revision '%s'", rev)
	case !includesUnchanged(obj, includes):
		reason, msg = sourcev1.IncludeChangeReason, "included artifacts differ from last observed includes"
	default:
		// The content configuration or verification changed: rebuilt, not outdated.
		return
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, reason, "%s", msg)
}

// gitTimeout is the bound of every Git operation of one reconcile.
func gitTimeout(obj *sourcev1.GitRepository) time.Duration {
	if obj.Spec.Timeout != nil {
		return obj.Spec.Timeout.Duration
	}
	return defaultGitTimeout
}

// resolve asks the remote which commit the reference names (ls-remote, no clone), and returns
// how to reach it. On failure, reason is the FetchFailed reason that fits it.
func (r *GitRepositoryReconciler) resolve(ctx context.Context, obj *sourcev1.GitRepository, tmp *scratchDir) (git.Revision, git.Remote, string, error) {
	// Before any network access: no Secret or retry can make a cloud identity appear.
	if err := cloudProvider(obj.Spec.Provider); err != nil {
		return git.Revision{}, git.Remote{}, sourcev1.AuthenticationFailedReason, reconcile.TerminalError(err)
	}
	u, err := url.Parse(obj.Spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ssh") {
		return git.Revision{}, git.Remote{}, sourcev1.URLInvalidReason,
			reconcile.TerminalError(fmt.Errorf("URL '%s' is not an http, https or ssh URL", obj.Spec.URL))
	}
	auth, err := r.auth(ctx, obj, u, tmp)
	if err != nil {
		return git.Revision{}, git.Remote{}, sourcev1.AuthenticationFailedReason, err
	}
	proxy, err := r.gitProxy(ctx, obj, u)
	if err != nil {
		return git.Revision{}, git.Remote{}, sourcev1.AuthenticationFailedReason, err
	}
	remote := git.Remote{URL: obj.Spec.URL, Auth: auth, Proxy: proxy}
	rev, err := git.Resolve(ctx, remote, obj.Spec.Reference)
	if err != nil {
		return git.Revision{}, git.Remote{}, gitReason(err), fmt.Errorf("failed to resolve the revision of '%s': %w", obj.Spec.URL, timeoutError(ctx, err))
	}
	return rev, remote, "", nil
}

// waitingRevision is, for a GitRepository its gates hold, the revision it would fetch if they
// were open: "" when it is the stored one or cannot be told (the error is only logged, the
// held source is not failing).
func (r *GitRepositoryReconciler) waitingRevision(ctx context.Context, obj *sourcev1.GitRepository) string {
	tmp := &scratchDir{pattern: "gitrepository-*"}
	defer tmp.remove()
	gitCtx, cancel := context.WithTimeout(ctx, gitTimeout(obj))
	defer cancel()
	rev, _, _, err := r.resolve(gitCtx, obj, tmp)
	if err != nil {
		log.FromContext(ctx).Info("held by its gates; the remote revision is not known", "error", status.Redact(err.Error()))
		return ""
	}
	if art := obj.Status.Artifact; art != nil && art.Revision == rev.String() {
		return ""
	}
	return rev.String()
}

// reconcileArtifact archives the commit's tree, with the included artifacts at their toPath,
// and makes it the served artifact.
func (r *GitRepositoryReconciler) reconcileArtifact(obj *sourcev1.GitRepository, commit git.Commit, includes []*meta.Artifact, tmp *scratchDir) error {
	art := r.Storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, commit.Revision.String(), commit.Revision.Hash+".tar.gz")
	mounts, closeMounts, reason, err := r.includeMounts(obj, includes, tmp)
	defer closeMounts()
	if err != nil {
		return r.storageFailed(obj, reason, err)
	}
	files := commit.Files
	mounted := make([]string, 0, len(mounts))
	if len(mounts) > 0 {
		files = overlayFS{base: commit.Files, mounts: mounts}
		for p := range mounts {
			mounted = append(mounted, p)
		}
	}
	ignore, err := storage.IgnoreFilterFS(files, obj.Spec.Ignore)
	if err != nil {
		return r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("reading the ignore rules: %w", err))
	}
	var sparse []string // none: the whole tree
	if len(obj.Spec.SparseCheckout) > 0 {
		sparse = sparseDirs(obj.Spec.SparseCheckout)
	}
	// The sparse checkout is of the repository's tree: the includes are kept whatever it lists.
	filter := func(p string, d fs.DirEntry) bool {
		return !(sparseKeeps(sparse, p) || len(mounted) > 0 && sparseKeeps(mounted, p)) || ignore(p, d)
	}
	if err := r.Storage.ArchiveFS(&art, files, filter); err != nil {
		reason := sourcev1.ArchiveOperationFailedReason
		if errors.Is(err, storage.ErrArtifactTooLarge) {
			reason = sourcev1.ArtifactTooLargeReason
		}
		return r.storageFailed(obj, reason, fmt.Errorf("archiving revision '%s': %w", commit.Revision, err))
	}
	if _, err := r.storeArtifact(obj, art, latestLink, sourcev1.NewArtifactReason, fmt.Sprintf("stored artifact for commit '%s'", commit.Subject)); err != nil {
		return err
	}
	observeContent(obj)
	obj.Status.IncludedArtifacts = includes
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
