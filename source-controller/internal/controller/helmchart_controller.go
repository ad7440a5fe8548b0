package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/fluxcd/pkg/runtime/predicates"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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

// helmChartSourceIndex indexes HelmCharts by `<kind>/<name>` of their source.
const helmChartSourceIndex = "spec.sourceRef"

// SetupWithManager registers the HelmChart controller: besides its own changes and its gates, a
// chart is reconciled when the artifact revision of its source changes.
func (r *HelmChartReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &sourcev1.HelmChart{}, helmChartSourceIndex, func(o client.Object) []string {
		ref := o.(*sourcev1.HelmChart).Spec.SourceRef
		return []string{ref.Kind + "/" + ref.Name}
	}); err != nil {
		return err
	}
	if err := gates.SetupIndex(ctx, mgr.GetFieldIndexer(), &sourcev1.HelmChart{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.HelmChart{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{},
		))).
		Watches(&sourcev1.HelmRepository{}, handler.EnqueueRequestsFromMapFunc(r.chartsOf(sourcev1.HelmRepositoryKind)),
			builder.WithPredicates(artifactRevisionChanged())).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.chartsOf(sourcev1.GitRepositoryKind)),
			builder.WithPredicates(artifactRevisionChanged())).
		Watches(&sourcev1.Bucket{}, handler.EnqueueRequestsFromMapFunc(r.chartsOf(sourcev1.BucketKind)),
			builder.WithPredicates(artifactRevisionChanged())).
		WithOptions(opts)
	newList := func() client.ObjectList { return &sourcev1.HelmChartList{} }
	return completeSource(b, r.Shards, mgr.GetClient(), &sourcev1.HelmChart{}, newList, r)
}

// chartsOf maps a source to the HelmCharts built from it.
func (r *HelmChartReconciler) chartsOf(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &sourcev1.HelmChartList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
			client.MatchingFields{helmChartSourceIndex: kind + "/" + o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

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
//
// The steps, each below in this order: get the chart from its source (buildFromHelmRepository,
// which goes on with buildFromOCI for a repository of type oci, or buildFromArtifactSource),
// then storeChart. What talks to the repositories and registries is in helmchart_fetch.go,
// what checks signatures in helmchart_verify.go.
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

// buildFromHelmRepository resolves the version in the repository's compact index and pulls
// the chart, unless the stored chart already is that version built the same way.
func (r *HelmChartReconciler) buildFromHelmRepository(ctx context.Context, obj *sourcev1.HelmChart, tmp string) (*chart.Result, bool, error) {
	repo := &sourcev1.HelmRepository{}
	if waiting, err := r.getSource(ctx, obj, repo); err != nil || (waiting && repo.Spec.Type != sourcev1.HelmRepositoryTypeOCI) {
		return nil, waiting, err
	}
	if repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		res, err := r.buildFromOCI(ctx, obj, repo, tmp)
		return res, false, err
	}
	if err := r.verifyUnsupported(obj, fmt.Sprintf("HelmRepository '%s' (an HTTP repository)", repo.Name)); err != nil {
		return nil, false, err
	}
	indexPath, err := r.Storage.Localize(ctx, *repo.Status.Artifact)
	if err != nil {
		return nil, false, err
	}
	ref, err := r.IndexCache.Resolve(indexPath, obj.Spec.Chart, obj.Spec.Version)
	if err != nil {
		if errors.Is(err, index.ErrChartNotFound) {
			return nil, false, r.fetchFailed(obj, sourcev1.InvalidChartReferenceReason, reconcile.TerminalError(
				fmt.Errorf("invalid chart reference: failed to get chart version for remote reference: %w", err)))
		}
		return nil, false, r.fetchFailed(obj, sourcev1.ChartPullFailedReason, fmt.Errorf("reading the index of HelmRepository '%s': %w", repo.Name, err))
	}
	opts := r.chartOptions(obj)
	want, err := chart.VersionWithMetadata(ref.Version, opts.VersionMetadata)
	if err != nil {
		return nil, false, r.fetchFailed(obj, sourcev1.InvalidChartReferenceReason, reconcile.TerminalError(
			fmt.Errorf("invalid chart reference: version '%s' of chart '%s': %w", ref.Version, ref.Name, err)))
	}
	if a := obj.Status.Artifact; a != nil && a.Revision == want && obj.Status.ObservedChartName == ref.Name && sameValuesFiles(obj) {
		obj.Status.ObservedSourceArtifactRevision = repo.Status.Artifact.Revision
		r.upToDate(ctx, obj)
		return nil, false, nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewChartReason, "pulling '%s' chart with version '%s'", ref.Name, want)

	remote, err := r.remoteReference(ctx, repo, ref)
	if err != nil {
		return nil, false, r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	res, err := r.Downloads.Pull(ctx, remote, filepath.Join(tmp, "out"), opts)
	if err != nil {
		return nil, false, r.chartFailed(obj, sourcev1.ChartPullFailedReason, err)
	}
	obj.Status.ObservedSourceArtifactRevision = repo.Status.Artifact.Revision
	return res, false, nil
}

// buildFromOCI resolves the chart's version from the tags of oci://<repository>/<chart> and
// pulls it with Helm's registry client.
func (r *HelmChartReconciler) buildFromOCI(ctx context.Context, obj *sourcev1.HelmChart, repo *sourcev1.HelmRepository, tmp string) (*chart.Result, error) {
	ref := strings.TrimSuffix(strings.TrimPrefix(repo.Spec.URL, "oci://"), "/") + "/" + obj.Spec.Chart
	client, err := r.registryClient(ctx, repo, tmp)
	if err != nil {
		return nil, r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	tags, err := client.Tags(ref)
	if err != nil {
		return nil, r.fetchFailed(obj, sourcev1.ChartPullFailedReason, fmt.Errorf("listing the tags of 'oci://%s': %w", ref, err))
	}
	version, err := newestInRange(tags, obj.Spec.Chart, obj.Spec.Version)
	if err != nil {
		return nil, r.fetchFailed(obj, sourcev1.InvalidChartReferenceReason, reconcile.TerminalError(
			fmt.Errorf("invalid chart reference: failed to get chart version for remote reference: %w", err)))
	}
	opts := r.chartOptions(obj)
	want, err := chart.VersionWithMetadata(version, opts.VersionMetadata)
	if err != nil {
		return nil, r.fetchFailed(obj, sourcev1.InvalidChartReferenceReason, reconcile.TerminalError(err))
	}
	if a := obj.Status.Artifact; a != nil && a.Revision == want && obj.Status.ObservedChartName == obj.Spec.Chart && sameValuesFiles(obj) &&
		!needsVerification(obj, obj.Spec.Verify) {
		if obj.Spec.Verify == nil {
			conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		}
		r.upToDate(ctx, obj)
		return nil, nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewChartReason, "pulling '%s' chart with version '%s'", obj.Spec.Chart, want)

	pulled, err := client.Pull(ref+":"+version, helmregistry.PullOptWithChart(true))
	if err != nil {
		return nil, r.fetchFailed(obj, sourcev1.ChartPullFailedReason, fmt.Errorf("pulling 'oci://%s:%s': %w", ref, version, err))
	}
	if err := r.verifyChart(ctx, obj, repo, ref, pulled.Manifest.Digest); err != nil {
		return nil, err
	}
	res, err := chart.FromArchive(pulled.Chart.Data, "oci://"+ref+":"+version, filepath.Join(tmp, "out"), opts)
	if err != nil {
		return nil, r.chartFailed(obj, sourcev1.ChartPullFailedReason, err)
	}
	obj.Status.ObservedSourceArtifactRevision = ""
	return res, nil
}

// buildFromArtifactSource downloads the artifact of a GitRepository or Bucket through its URL (digest
// verified) and packages the chart at spec.chart, unless the source revision and the spec are
// the ones the stored chart was built from.
func (r *HelmChartReconciler) buildFromArtifactSource(ctx context.Context, obj *sourcev1.HelmChart, tmp string, src source) (*chart.Result, bool, error) {
	if waiting, err := r.getSource(ctx, obj, src); waiting || err != nil {
		return nil, waiting, err
	}
	name := fmt.Sprintf("%s '%s'", obj.Spec.SourceRef.Kind, obj.Spec.SourceRef.Name)
	if err := r.verifyUnsupported(obj, name); err != nil {
		return nil, false, err
	}
	srcArt := src.GetArtifact()
	if a := obj.Status.Artifact; a != nil && obj.Status.ObservedSourceArtifactRevision == srcArt.Revision &&
		obj.Status.ObservedGeneration == obj.Generation && sameValuesFiles(obj) {
		r.upToDate(ctx, obj)
		return nil, false, nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewChartReason, "packaging chart '%s' of revision '%s'", obj.Spec.Chart, srcArt.Revision)

	srcDir := filepath.Join(tmp, "source")
	// Signed now: the source's status may still carry a URL of a key that was rotated out.
	fetched := *srcArt
	r.signURL(src, &fetched)
	if err := r.Fetcher.Fetch(ctx, fetched.URL, fetched.Digest, srcDir); err != nil {
		return nil, false, r.fetchFailed(obj, sourcev1.SourceUnavailableReason, fmt.Errorf("fetching the artifact of %s: %w", name, err))
	}
	opts := r.chartOptions(obj)
	if obj.Spec.ReconcileStrategy == sourcev1.ReconcileStrategyRevision {
		opts.VersionMetadata = revisionMetadata(srcArt.Revision)
	}
	res, err := chart.Package(srcDir, obj.Spec.Chart, filepath.Join(tmp, "out"), opts)
	if err != nil {
		return nil, false, r.chartFailed(obj, sourcev1.ChartPackageFailedReason, err)
	}
	obj.Status.ObservedSourceArtifactRevision = srcArt.Revision
	return res, false, nil
}

// revisionMetadata is the first 12 characters of the digest part of a source revision
// (`main@sha1:<hex>` → `<hex[:12]>`), the version metadata of the Revision strategy.
func revisionMetadata(revision string) string {
	if _, d, ok := strings.Cut(revision, ":"); ok {
		revision = d
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	return revision
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

// The helpers below are shared by the steps above.

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

// chartOptions are the build options of the spec: values files, and the generation as version
// metadata when values files change the chart.
func (r *HelmChartReconciler) chartOptions(obj *sourcev1.HelmChart) chart.Options {
	opts := chart.Options{ValuesFiles: obj.Spec.ValuesFiles, IgnoreMissingValuesFiles: obj.Spec.IgnoreMissingValuesFiles, Limits: r.Limits}
	if len(obj.Spec.ValuesFiles) > 0 {
		opts.VersionMetadata = strconv.FormatInt(obj.Generation, 10)
	}
	return opts
}

// sameValuesFiles: the stored chart was built with the values files of the spec.
func sameValuesFiles(obj *sourcev1.HelmChart) bool {
	return slices.Equal(obj.Spec.ValuesFiles, obj.Status.ObservedValuesFiles) || obj.Spec.IgnoreMissingValuesFiles
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

// chartFailed maps the build errors to the condition a user sees: an invalid reference or
// values file is Stalled until the spec changes; the rest is retried.
func (r *HelmChartReconciler) chartFailed(obj *sourcev1.HelmChart, reason string, err error) error {
	switch {
	case errors.Is(err, chart.ErrValuesFile), errors.Is(err, chart.ErrDependency), errors.Is(err, chart.ErrChartLoad):
		return r.buildFailed(obj, reason, reconcile.TerminalError(err))
	case errors.Is(err, chart.ErrTooLarge):
		return r.buildFailed(obj, reason, err)
	default:
		return r.fetchFailed(obj, reason, err)
	}
}

func (r *HelmChartReconciler) buildFailed(obj *sourcev1.HelmChart, reason string, err error) error {
	return r.failed(obj, sourcev1.BuildFailedCondition, reason, err)
}
