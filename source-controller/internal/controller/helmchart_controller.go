package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

// HelmChartReconciler builds chart artifacts from HelmRepositories and GitRepositories.
type HelmChartReconciler struct {
	SourceReconciler
	// Limits are --helm-chart-max-size and --helm-chart-file-max-size.
	Limits chart.Limits
	// RequeueDependency is how soon a chart whose source is not ready is retried.
	RequeueDependency time.Duration
	// Fetcher downloads GitRepository artifacts through their URL, like any consumer.
	Fetcher *artifact.Fetcher
	// IndexCache keeps opened repository indexes (--helm-cache-*); nil reads them every time.
	IndexCache *index.Cache
	// Downloads shares chart downloads between HelmCharts (--helm-chart-cache-max-size); nil
	// downloads for each.
	Downloads *chart.Downloads
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts/status;helmcharts/finalizers,verbs=get;update;patch

func (r *HelmChartReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.HelmChart{}
	return r.reconcile(ctx, req, obj, func() sourceKind {
		return sourceKind{
			kind: sourcev1.HelmChartKind, suspended: obj.Spec.Suspend, observedGeneration: &obj.Status.ObservedGeneration,
			interval: jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration),
			ready:    func() (string, string) { return chartReadyMessage(obj) },
			steps:    func(ctx context.Context) (time.Duration, error) { return r.reconcileSteps(ctx, obj) },
		}
	})
}

// reconcileSteps builds the chart from its source, unless the stored chart is already the one
// asked for, and stores it. A source that is missing or has no artifact yet is waited for: it is
// looked at again after RequeueDependency.
func (r *HelmChartReconciler) reconcileSteps(ctx context.Context, obj *sourcev1.HelmChart) (time.Duration, error) {
	tmp, err := os.MkdirTemp("", "helmchart-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	var res *chart.Result
	var waiting bool
	switch obj.Spec.SourceRef.Kind {
	case sourcev1.HelmRepositoryKind:
		res, waiting, err = r.buildFromHelmRepository(ctx, obj, tmp)
	case sourcev1.GitRepositoryKind:
		res, waiting, err = r.buildFromArtifactSource(ctx, obj, tmp, &sourcev1.GitRepository{})
	case sourcev1.BucketKind:
		res, waiting, err = r.buildFromArtifactSource(ctx, obj, tmp, &sourcev1.Bucket{})
	default:
		err = r.fetchFailed(obj, sourcev1.InvalidChartReferenceReason, reconcile.TerminalError(fmt.Errorf(
			"invalid chart reference: source kind '%s' is not supported: use a HelmRepository, a GitRepository or a Bucket", obj.Spec.SourceRef.Kind)))
	}
	switch {
	case err != nil:
		return 0, err
	case waiting:
		return r.RequeueDependency, nil
	case res != nil:
		return 0, r.storeChart(obj, res)
	}
	return 0, nil
}

// getSource reads the chart's source; waiting is true (with a condition saying why) when it
// does not exist or has no artifact yet.
func (r *HelmChartReconciler) getSource(ctx context.Context, obj *sourcev1.HelmChart, src source) (bool, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.SourceRef.Name}
	if err := r.Get(ctx, key, src); err != nil {
		if apierrors.IsNotFound(err) {
			_ = r.fetchFailed(obj, sourcev1.SourceUnavailableReason,
				fmt.Errorf("%s '%s' not found", obj.Spec.SourceRef.Kind, key))
			return true, nil
		}
		return false, err
	}
	if repo, ok := src.(*sourcev1.HelmRepository); ok && repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		return false, nil // no artifact: charts are pulled from the registry
	}
	if src.GetArtifact() == nil {
		markFailure(obj, sourcev1.FetchFailedCondition, sourcev1.SourceUnavailableReason,
			fmt.Sprintf("%s '%s' has no artifact yet", obj.Spec.SourceRef.Kind, key))
		return true, nil
	}
	// The source is there: an earlier "source unavailable" no longer holds.
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	return false, nil
}

// storeChart makes the built chart the artifact.
func (r *HelmChartReconciler) storeChart(obj *sourcev1.HelmChart, res *chart.Result) error {
	art := r.Storage.NewArtifactFor(sourcev1.HelmChartKind, obj, res.Version, res.Name+"-"+res.Version+".tgz")
	f, err := os.Open(res.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := r.Storage.Copy(&art, f); err != nil {
		reason := sourcev1.ArchiveOperationFailedReason
		if errors.Is(err, chart.ErrTooLarge) {
			reason = sourcev1.ArtifactTooLargeReason
		}
		return r.storageFailed(obj, reason, fmt.Errorf("storing chart '%s' version '%s': %w", res.Name, res.Version, err))
	}
	obj.Status.ObservedChartName = res.Name
	obj.Status.ObservedValuesFiles = res.ValuesFiles
	reason, msg := chartReadyMessageFor(res.Packaged, res.Name, res.Version)
	url, err := r.storeArtifact(obj, art, latestLink, reason, msg)
	if err != nil {
		return err
	}
	obj.Status.URL = url
	conditions.Delete(obj, sourcev1.BuildFailedCondition)
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	return nil
}

// upToDate records that the stored chart is the one asked for.
func (r *HelmChartReconciler) upToDate(ctx context.Context, obj *sourcev1.HelmChart) {
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	conditions.Delete(obj, sourcev1.BuildFailedCondition)
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	msg := fmt.Sprintf("artifact up-to-date with remote revision: '%s'", obj.Status.Artifact.Revision)
	log.FromContext(ctx).Info(msg)
	r.EventRecorder.Event(obj, corev1.EventTypeNormal, sourcev1.ArtifactUpToDateReason, msg)
}

// chartReadyMessage is Ready's reason and message of a stored chart (docs/helmchart.md): pulled
// as is from a repository, or packaged (from Git, or with values files).
func chartReadyMessage(obj *sourcev1.HelmChart) (string, string) {
	packaged := obj.Spec.SourceRef.Kind != sourcev1.HelmRepositoryKind || len(obj.Status.ObservedValuesFiles) > 0
	return chartReadyMessageFor(packaged, obj.Status.ObservedChartName, obj.Status.Artifact.Revision)
}

func chartReadyMessageFor(packaged bool, name, version string) (string, string) {
	if packaged {
		return sourcev1.ChartPackageSucceededReason, fmt.Sprintf("packaged '%s' chart with version '%s'", name, version)
	}
	return sourcev1.ChartPullSucceededReason, fmt.Sprintf("pulled '%s' chart with version '%s'", name, version)
}

// sameValuesFiles: the stored chart was built with the values files of the spec.
func sameValuesFiles(obj *sourcev1.HelmChart) bool {
	return slices.Equal(obj.Spec.ValuesFiles, obj.Status.ObservedValuesFiles) || obj.Spec.IgnoreMissingValuesFiles
}

func (r *HelmChartReconciler) buildFailed(obj *sourcev1.HelmChart, reason string, err error) error {
	return r.failed(obj, sourcev1.BuildFailedCondition, reason, err)
}
