package controller

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"

	"github.com/sluice-gitops/sluice/shared/status"
)

// defaultHelmRepositoryInterval applies when spec.interval is unset.
const defaultHelmRepositoryInterval = 10 * time.Minute

// HelmRepositoryReconciler fetches Helm repository indexes and stores them in a compact form
// HelmCharts resolve versions from.
type HelmRepositoryReconciler struct {
	SourceReconciler
	// MaxIndexSize is --helm-index-max-size.
	MaxIndexSize int64
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories/status;helmrepositories/finalizers,verbs=get;update;patch

func (r *HelmRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &sourcev1.HelmRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := status.NewPatcher(obj, r.Client)
	defer func() { retErr = r.finalizeStatus(ctx, obj, patcher, &obj.Status.ObservedGeneration, retErr, nil) }()

	if done, err := r.preamble(ctx, obj, sourcev1.HelmRepositoryKind, obj.Spec.Suspend); done {
		return ctrl.Result{}, err
	}
	if obj.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		// No index to fetch: HelmCharts resolve and pull their chart from the registry.
		obj.Status.Artifact, obj.Status.URL = nil, ""
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason,
			"Helm repository of type oci: charts are resolved from the registry by each HelmChart")
		return ctrl.Result{}, nil
	}
	interval := obj.Spec.Interval.Duration
	if interval == 0 {
		interval = defaultHelmRepositoryInterval
	}
	interval = jitter.JitteredIntervalDuration(interval)

	if err := r.reconcileStorage(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	if blocked, err := r.reconcileGates(ctx, obj); err != nil || blocked {
		return ctrl.Result{RequeueAfter: interval}, err
	}
	if err := r.reconcileIndex(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}
