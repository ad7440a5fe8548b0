package controller

import (
	"context"
	"os"
	"time"

	"github.com/fluxcd/pkg/runtime/jitter"
	ctrl "sigs.k8s.io/controller-runtime"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// GitRepositoryReconciler fetches Git repositories and stores their content as artifacts.
type GitRepositoryReconciler struct {
	SourceReconciler
	// MaxCloneSize bounds what a clone writes, .git and working tree (--git-max-clone-size);
	// 0 means no limit.
	MaxCloneSize int64
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
