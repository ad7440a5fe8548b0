package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

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
