package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/fluxcd/pkg/runtime/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/status"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/git"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// GitRepositoryReconciler fetches Git repositories and stores their content as artifacts.
type GitRepositoryReconciler struct {
	SourceReconciler
	// MaxCloneSize bounds what a clone writes, .git and working tree (--git-max-clone-size);
	// 0 means no limit.
	MaxCloneSize int64
}

// gitRepositoryIncludeIndex indexes GitRepositories by the names of those they include.
const gitRepositoryIncludeIndex = "spec.include.repository.name"

// SetupWithManager registers the GitRepository controller: as every source, and besides, a
// GitRepository is reconciled when the artifact of one it includes changes (spec.include
// index and GitRepository watch).
func (r *GitRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &sourcev1.GitRepository{}, gitRepositoryIncludeIndex, func(o client.Object) []string {
		var names []string
		for _, incl := range o.(*sourcev1.GitRepository).Spec.Include {
			names = append(names, incl.GitRepositoryRef.Name)
		}
		return names
	}); err != nil {
		return err
	}
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &sourcev1.GitRepository{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.GitRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{},
		))).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.includersOf),
			builder.WithPredicates(artifactChanged())).
		WithOptions(opts)
	newList := func() client.ObjectList { return &sourcev1.GitRepositoryList{} }
	return completeSource(b, r.Shards, mgr.GetClient(), &sourcev1.GitRepository{}, newList, r)
}

// includersOf maps a GitRepository to those of its namespace that include it.
func (r *GitRepositoryReconciler) includersOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &sourcev1.GitRepositoryList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{gitRepositoryIncludeIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/status;gitrepositories/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.GitRepository{}
	return r.reconcile(ctx, req, obj, func() sourceKind {
		return sourceKind{
			kind: sourcev1.GitRepositoryKind, suspended: obj.Spec.Suspend, observedGeneration: &obj.Status.ObservedGeneration,
			interval: jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration),
			steps:    func(ctx context.Context) (time.Duration, error) { return r.reconcileSteps(ctx, obj) },
			waiting:  func(ctx context.Context) string { return r.waitingRevision(ctx, obj) },
		}
	})
}

// reconcileSteps reads the included artifacts (waiting while one is missing), fetches the
// reference (into a temporary directory when it is too large to be kept in memory) and, when
// it is a new revision or the content it would give changed, stores its tree, with the
// includes, as the artifact.
//
// The steps are below in this order; what reaches the remote is in gitrepository_fetch.go, the
// signature checks in gitrepository_verify.go, the includes in gitrepository_include.go.
func (r *GitRepositoryReconciler) reconcileSteps(ctx context.Context, obj *sourcev1.GitRepository) (time.Duration, error) {
	tmp := &scratchDir{pattern: "gitrepository-*"}
	defer tmp.remove()
	includes, wait, err := r.includedArtifacts(ctx, obj)
	if err != nil || wait {
		return requeueInclude, err
	}
	commit, changed, err := r.reconcileSource(ctx, obj, tmp, includes)
	if err != nil || !changed {
		return 0, err
	}
	return 0, r.reconcileArtifact(obj, commit, includes, tmp)
}

// reconcileSource resolves the reference on the remote and, when it is not the stored
// revision, fetches it. changed is false for a no-op: the artifact is up to date.
//
// The remote is asked for its references (ls-remote) only when the answer can spare the clone:
// when an artifact was built with the same spec and includes, or when the reference is a semver
// range or a name, which only the list resolves. A first fetch of a branch or a tag clones at
// once, and the clone tells the commit (as Flux does: one exchange with the Git server less).
func (r *GitRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.GitRepository, tmp *scratchDir, includes []*meta.Artifact) (git.Commit, bool, error) {
	gitCtx, cancel := context.WithTimeout(ctx, gitTimeout(obj))
	defer cancel()
	art := obj.Status.Artifact
	mayBeUpToDate := art != nil && contentUnchanged(obj) && includesUnchanged(obj, includes) && verificationUnchanged(obj)
	rev, unlisted := git.Unlisted(obj.Spec.Reference)
	var remote git.Remote
	var reason string
	var err error
	if mayBeUpToDate || !unlisted {
		unlisted = false
		rev, remote, reason, err = r.resolve(gitCtx, obj, tmp)
	} else {
		remote, reason, err = r.remote(gitCtx, obj, tmp)
	}
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, reason, err)
	}
	if mayBeUpToDate && art.Revision == rev.String() {
		clearVerification(obj)
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		log.FromContext(ctx).Info(fmt.Sprintf("artifact up-to-date with remote revision: '%s'", rev))
		return git.Commit{}, false, nil
	}
	if !unlisted {
		outdated(obj, rev, includes)
	}

	dir := func() (string, error) {
		d, err := tmp.path()
		return d + "/src", err
	}
	commit, err := git.Checkout(gitCtx, dir, remote, rev, r.MaxCloneSize, obj.Spec.RecurseSubmodules)
	if unlisted && errors.Is(err, git.ErrRefNotFound) {
		return git.Commit{}, false, r.fetchFailed(obj, gitReason(err), resolveFailed(gitCtx, obj, err))
	}
	if err != nil {
		return git.Commit{}, false, r.fetchFailed(obj, gitReason(err), fmt.Errorf("failed to checkout '%s' of '%s': %w", rev, obj.Spec.URL, timeoutError(gitCtx, err)))
	}
	if unlisted {
		outdated(obj, commit.Revision, includes)
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

// contentUnchanged: the spec fields that shape the artifact's content, besides the commit, are
// those the stored artifact was built with (status.observed*). A change of one rebuilds the
// artifact of the same commit.
func contentUnchanged(obj *sourcev1.GitRepository) bool {
	return ignoreEqual(obj.Spec.Ignore, obj.Status.ObservedIgnore) &&
		slices.Equal(obj.Spec.SparseCheckout, obj.Status.ObservedSparseCheckout) &&
		slices.Equal(obj.Spec.Include, obj.Status.ObservedInclude) &&
		obj.Spec.RecurseSubmodules == obj.Status.ObservedRecurseSubmodules
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

// reconcileArtifact archives the commit's tree, with the included artifacts at their toPath,
// and makes it the served artifact.
func (r *GitRepositoryReconciler) reconcileArtifact(obj *sourcev1.GitRepository, commit git.Commit, includes []*meta.Artifact, tmp *scratchDir) error {
	art := r.Storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, commit.Revision.String(), commit.Revision.Hash+".tar.gz")
	if commit.Object != nil {
		// Who wrote the revision, for the gates that refuse its self-approval.
		if author := artifact.GitAuthor(commit.Object.Author.Name, commit.Object.Author.Email); author != "" {
			art.Metadata = map[string]string{artifact.AuthorMetadataKey: author}
		}
	}
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

// observeContent records, with a new artifact, the spec fields it was built with.
func observeContent(obj *sourcev1.GitRepository) {
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedSparseCheckout = obj.Spec.SparseCheckout
	obj.Status.ObservedInclude = obj.Spec.Include
	obj.Status.ObservedRecurseSubmodules = obj.Spec.RecurseSubmodules
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

// scratchDir is a temporary directory made on first use: an unchanged repository (most
// reconciles) needs none, and making and removing one costs more CPU than the rest of such a
// reconcile on a busy file system.
type scratchDir struct {
	pattern, dir string
}

func (s *scratchDir) path() (string, error) {
	if s.dir == "" {
		dir, err := os.MkdirTemp("", s.pattern)
		if err != nil {
			return "", err
		}
		s.dir = dir
	}
	return s.dir, nil
}

func (s *scratchDir) remove() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
