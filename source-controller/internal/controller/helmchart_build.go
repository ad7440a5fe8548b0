package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

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
	ref, err := r.IndexCache.Resolve(r.Storage.LocalPath(*repo.Status.Artifact), obj.Spec.Chart, obj.Spec.Version)
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

// chartOptions are the build options of the spec: values files, and the generation as version
// metadata when values files change the chart.
func (r *HelmChartReconciler) chartOptions(obj *sourcev1.HelmChart) chart.Options {
	opts := chart.Options{ValuesFiles: obj.Spec.ValuesFiles, IgnoreMissingValuesFiles: obj.Spec.IgnoreMissingValuesFiles, Limits: r.Limits}
	if len(obj.Spec.ValuesFiles) > 0 {
		opts.VersionMetadata = strconv.FormatInt(obj.Generation, 10)
	}
	return opts
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

// remoteReference is where and how to download a chart of a repository index: relative URLs
// resolve against the repository URL; credentials go to the repository's host only, unless
// spec.passCredentials.
func (r *HelmChartReconciler) remoteReference(ctx context.Context, repo *sourcev1.HelmRepository, ref *index.ChartVersion) (chart.RemoteReference, error) {
	if len(ref.URLs) == 0 {
		return chart.RemoteReference{}, fmt.Errorf("chart '%s' version '%s' has no URL in the index", ref.Name, ref.Version)
	}
	base, err := url.Parse(strings.TrimSuffix(repo.Spec.URL, "/") + "/")
	if err != nil {
		return chart.RemoteReference{}, err
	}
	u, err := base.Parse(ref.URLs[0])
	if err != nil {
		return chart.RemoteReference{}, fmt.Errorf("chart URL '%s': %w", ref.URLs[0], err)
	}
	access, err := r.helmRepositoryAccess(ctx, repo)
	if err != nil {
		return chart.RemoteReference{}, err
	}
	remote := chart.RemoteReference{URL: u.String(), Digest: ref.Digest, TLS: access.Transport.TLSClientConfig}
	if u.Host == base.Host || repo.Spec.PassCredentials {
		remote.Username, remote.Password = access.Username, access.Password
	}
	return remote, nil
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
