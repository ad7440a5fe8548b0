package controller

import (
	"context"
	"os"

	"github.com/fluxcd/pkg/runtime/jitter"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"

	"github.com/sluice-gitops/sluice/shared/status"
)

// GitRepositoryReconciler fetches Git repositories and stores their content as artifacts.
type GitRepositoryReconciler struct {
	SourceReconciler
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/status;gitrepositories/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &sourcev1.GitRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := status.NewPatcher(obj, r.Client)
	defer func() { retErr = r.finalizeStatus(ctx, obj, patcher, &obj.Status.ObservedGeneration, retErr, nil) }()

	if done, err := r.preamble(ctx, obj, sourcev1.GitRepositoryKind, obj.Spec.Suspend); done {
		return ctrl.Result{}, err
	}
	interval := jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration)

	if err := r.reconcileStorage(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	if blocked, err := r.reconcileGates(ctx, obj); err != nil || blocked {
		return ctrl.Result{RequeueAfter: interval}, err
	}
	tmp, err := os.MkdirTemp("", "gitrepository-*")
	if err != nil {
		return ctrl.Result{}, err
	}
	defer os.RemoveAll(tmp)
	commit, changed, err := r.reconcileSource(ctx, obj, tmp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		if err := r.reconcileArtifact(obj, commit, tmp); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}
