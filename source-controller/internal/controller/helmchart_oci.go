package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
)

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

// verifyChart checks the cosign signature of the pulled chart manifest (by its digest, so the
// chart verified is the chart pulled), with the repository's credentials and transport.
func (r *HelmChartReconciler) verifyChart(ctx context.Context, obj *sourcev1.HelmChart, repo *sourcev1.HelmRepository, ref, digest string) error {
	if obj.Spec.Verify == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	var nameOpts []name.Option
	if repo.Spec.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	d, err := name.NewDigest(ref+"@"+digest, nameOpts...)
	if err != nil {
		return r.notVerified(obj, fmt.Errorf("reference '%s@%s': %w", ref, digest, err))
	}
	access, err := r.helmRepositoryAccess(ctx, repo)
	if err != nil {
		return r.notVerified(obj, err)
	}
	opts := []remote.Option{remote.WithTransport(access.Transport)}
	if access.Username != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: access.Username, Password: access.Password}))
	}
	return r.verifySignature(ctx, obj, obj.Spec.Verify, d, opts)
}

// verifyUnsupported refuses spec.verify for charts that are not pulled from an OCI registry:
// only OCI charts carry cosign signatures (docs/helmchart.md).
func (r *HelmChartReconciler) verifyUnsupported(obj *sourcev1.HelmChart, source string) error {
	if obj.Spec.Verify == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	return r.notVerified(obj, reconcile.TerminalError(fmt.Errorf(
		"charts from %s carry no cosign signature, only charts from a HelmRepository of type 'oci' can be verified: remove spec.verify", source)))
}

// registryClient is Helm's registry client with the repository's credentials, CA and
// plain-HTTP setting, and a credentials file of its own (never the controller user's).
func (r *HelmChartReconciler) registryClient(ctx context.Context, repo *sourcev1.HelmRepository, tmp string) (*helmregistry.Client, error) {
	access, err := r.helmRepositoryAccess(ctx, repo)
	if err != nil {
		return nil, err
	}
	opts := []helmregistry.ClientOption{
		helmregistry.ClientOptCredentialsFile(filepath.Join(tmp, "registry.json")),
		helmregistry.ClientOptHTTPClient(&http.Client{Transport: access.Transport}),
	}
	if repo.Spec.Insecure {
		opts = append(opts, helmregistry.ClientOptPlainHTTP())
	}
	if access.Username != "" {
		opts = append(opts, helmregistry.ClientOptBasicAuth(access.Username, access.Password))
	}
	return helmregistry.NewClient(opts...)
}

// newestInRange picks the highest version among a chart's tags within the range (default `*`),
// with the message Helm repositories give when none matches.
func newestInRange(tags []string, name, rng string) (string, error) {
	if rng == "" {
		rng = "*"
	}
	v, err := highestTag(tags, rng)
	if errors.Is(err, errNoTagInRange) {
		return "", errors.New("no '" + name + "' chart with version matching '" + rng + "' found")
	}
	return v, err
}
