package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/opencontainers/go-digest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// BucketReconciler fetches the objects of S3-compatible buckets (minio-go) and serves them as
// artifacts.
type BucketReconciler struct {
	SourceReconciler
	ignoreFiles ignoreFiles
}

// SetupWithManager registers the Bucket controller.
func (r *BucketReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return setupSource(ctx, mgr, &sourcev1.Bucket{},
		func() client.ObjectList { return &sourcev1.BucketList{} }, opts, r.Shards, r)
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=buckets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=buckets/status;buckets/finalizers,verbs=get;update;patch

func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.Bucket{}
	return r.reconcile(ctx, req, obj, func() sourceKind {
		return sourceKind{
			kind: sourcev1.BucketKind, suspended: obj.Spec.Suspend, observedGeneration: &obj.Status.ObservedGeneration,
			interval: jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration),
			steps:    func(ctx context.Context) (time.Duration, error) { return 0, r.reconcileArtifact(ctx, obj) },
			waiting:  func(ctx context.Context) string { return r.waitingRevision(ctx, obj) },
			ready:    func() (string, string) { return readyWithColon(obj) },
		}
	})
}

// reconcileArtifact lists the bucket and, when the revision of what it lists is not the stored
// one, downloads the objects and archives them; an unchanged bucket costs a listing and no
// download. What reaches the bucket (client, listing, .sourceignore, downloads) is in
// bucket_fetch.go.
func (r *BucketReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.Bucket) error {
	if err := needsCloudIdentity(obj); err != nil {
		return r.fetchFailed(obj, sourcev1.CloudIdentityUnsupportedReason, reconcile.TerminalError(err))
	}
	ctx, cancel := context.WithTimeout(ctx, bucketTimeout(obj))
	defer cancel()
	c, err := r.bucketClient(ctx, obj)
	if errors.Is(err, errEndpointInvalid) {
		return r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
	}
	if err != nil {
		return r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	ix, err := r.listIndex(ctx, c, obj)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.BucketOperationFailedReason, err)
	}
	a := obj.Status.Artifact
	if a != nil && a.Revision == ix.revision(revisionAlgorithm(a.Revision, r.Storage.DigestAlgorithm)) &&
		ignoreEqual(obj.Spec.Ignore, obj.Status.ObservedIgnore) {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		return nil
	}
	alg := revisionAlgorithm("", r.Storage.DigestAlgorithm)
	revision := ix.revision(alg)
	if a != nil {
		conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new revision '%s'", revision)
	}

	// Refused by the listed sizes before any download; bounded again while reading.
	limit := r.Storage.MaxSize
	if size := ix.size(); limit > 0 && size > limit {
		return r.fetchFailed(obj, sourcev1.SourceTooLargeReason, bucketTooLarge(obj.Spec.BucketName, size, limit, false))
	}
	dir, remove, err := contentDir("bucket-*")
	if err != nil {
		return err
	}
	defer remove()
	if err := fetchObjects(ctx, c, obj.Spec.BucketName, ix, dir, limit); err != nil {
		if errors.Is(err, errBucketTooLarge) {
			return r.fetchFailed(obj, sourcev1.SourceTooLargeReason, err)
		}
		return r.fetchFailed(obj, sourcev1.BucketOperationFailedReason, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)

	// The downloads may have found newer ETags (or fewer objects) than the listing.
	revision = ix.revision(alg)
	art := r.Storage.NewArtifactFor(sourcev1.BucketKind, obj, revision, digest.Digest(revision).Encoded()+".tar.gz")
	if err := r.Storage.Archive(&art, dir, nil); err != nil {
		return r.storageFailed(obj, storageReason(err), fmt.Errorf("archiving the bucket's objects: %w", err))
	}
	url, err := r.storeArtifact(obj, art, latestLink, sourcev1.NewArtifactReason,
		fmt.Sprintf("stored artifact with %d fetched files from '%s' bucket", len(ix), obj.Spec.BucketName))
	if err != nil {
		return err
	}
	obj.Status.URL = url
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	return nil
}

// revisionAlgorithm is the digest algorithm of a stored revision, so that a change of
// --artifact-digest-algo does not rebuild an unchanged bucket; else that of the storage
// (sha256 by default).
func revisionAlgorithm(revision string, storage digest.Algorithm) digest.Algorithm {
	if d := digest.Digest(revision); revision != "" && d.Validate() == nil {
		return d.Algorithm()
	}
	if storage == "" {
		return digest.SHA256
	}
	return storage
}

// waitingRevision is the revision the bucket lists while the gates hold the Bucket ("" when it
// is the stored one or cannot be listed): a listing, no download.
func (r *BucketReconciler) waitingRevision(ctx context.Context, obj *sourcev1.Bucket) string {
	a := obj.Status.Artifact
	if a == nil || needsCloudIdentity(obj) != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, bucketTimeout(obj))
	defer cancel()
	c, err := r.bucketClient(ctx, obj)
	if err != nil {
		return ""
	}
	ix, err := r.listIndex(ctx, c, obj)
	if err != nil {
		return ""
	}
	rev := ix.revision(revisionAlgorithm(a.Revision, r.Storage.DigestAlgorithm))
	if rev == a.Revision {
		return ""
	}
	return rev
}
