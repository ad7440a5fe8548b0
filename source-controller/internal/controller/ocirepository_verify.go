package controller

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// verifyManifest checks the cosign signature of the manifest ref (by digest) with spec.verify
// (verifySignature, source_verify.go), unless the stored artifact is that manifest's and
// SourceVerified already vouches for it under the current spec. Without spec.verify,
// SourceVerified is removed.
func (r *OCIRepositoryReconciler) verifyManifest(ctx context.Context, obj *sourcev1.OCIRepository, stored bool,
	ref name.Digest, opts []remote.Option) error {
	if stored && obj.Spec.Verify != nil && !needsVerification(obj, obj.Spec.Verify) {
		return nil
	}
	return r.verifySignature(ctx, obj, obj.Spec.Verify, ref, opts)
}
