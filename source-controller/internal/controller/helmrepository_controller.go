package controller

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
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

func (r *HelmRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.HelmRepository{}
	return r.reconcile(ctx, req, obj, func() sourceKind {
		interval := obj.Spec.Interval.Duration
		if interval == 0 {
			interval = defaultHelmRepositoryInterval
		}
		interval = jitter.JitteredIntervalDuration(interval)
		k := sourceKind{
			kind: sourcev1.HelmRepositoryKind, suspended: obj.Spec.Suspend, observedGeneration: &obj.Status.ObservedGeneration,
			interval: interval,
			steps:    func(ctx context.Context) (time.Duration, error) { return 0, r.reconcileIndex(ctx, obj) },
		}
		if obj.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
			k.withoutArtifact = true
			k.steps = func(context.Context) (time.Duration, error) { return 0, reconcileOCIType(obj) }
		}
		return k
	})
}

// reconcileOCIType is the whole reconcile of a HelmRepository of type oci: there is no index to
// fetch, HelmCharts resolve and pull their chart from the registry. What an index fetch left
// (an artifact, its conditions) no longer applies.
func reconcileOCIType(obj *sourcev1.HelmRepository) error {
	obj.Status.Artifact, obj.Status.URL = nil, ""
	if err := cloudProvider(obj.Spec.Provider); err != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, sourcev1.AuthenticationFailedReason, "%s", err)
		return reconcile.TerminalError(err)
	}
	for _, c := range []string{sourcev1.ArtifactInStorageCondition, sourcev1.ArtifactOutdatedCondition,
		sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition} {
		conditions.Delete(obj, c)
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason,
		"Helm repository of type oci: charts are resolved from the registry by each HelmChart")
	return nil
}
